"""The one strict pydantic base: unknown fields are an error, so a typo in a file or a call is never ignored.

A bottom-layer module (it imports only pydantic), so every package may build on it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["Strict"]


class Strict(BaseModel):
    """A model that refuses fields it does not declare."""

    model_config = ConfigDict(extra="forbid")
