"""Simulated customers: scripted (personas, phrasing, messes), LLM, and τ²-bench's LLM customer."""
