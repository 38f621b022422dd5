"""Simulated customers: scripted (personas, phrasing, messes), LLM, and τ²-bench's LLM customer."""

from pipeline.users.phrasing import FORGOT
from pipeline.users.registry import make_user
from pipeline.users.scripted import ScriptedUser, ScriptedUserEpisode
from pipeline.users.tau2_llm import scenario_prompt

__all__ = ["FORGOT", "ScriptedUser", "ScriptedUserEpisode", "make_user", "scenario_prompt"]
