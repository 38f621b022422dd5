"""Replaying tool calls in a fresh retail session (the generic replay, pipeline.world.replay, re-exported)."""

from __future__ import annotations

from pipeline.world.replay import replay_actions, replay_gold

__all__ = ["replay_actions", "replay_gold"]
