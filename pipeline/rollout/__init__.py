"""One episode: an agent and a simulated customer in a fresh session of a world, recorded as a trajectory (the
runner, the participants' protocols, personas, turn decoders)."""
