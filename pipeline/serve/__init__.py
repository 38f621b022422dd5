"""`agentloop serve`: a local checkpoint behind an OpenAI-compatible chat-completions API with tool calls."""

from pipeline.serve.app import create_app, serve
from pipeline.serve.engine import CheckpointEngine, GenerationParams, load_engine

__all__ = ["CheckpointEngine", "GenerationParams", "create_app", "load_engine", "serve"]
