"""Bring your own environment: learn a world model by running a domain's tools, and grow tasks and scripted
participants from it for any domain."""
