"""The embedded default: a tiny retail agent model the project builds and trains on CPU from nothing it downloads."""
