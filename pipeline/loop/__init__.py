"""The loop as DVC stages: params sections, stage functions and the paths they share."""
