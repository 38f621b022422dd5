"""Agents: the specs that name them (`registry`), the checkpoint format, the model backends and the scripted kit."""
