"""`agentloop serve`: a local checkpoint behind an OpenAI-compatible chat-completions API with tool calls."""

from pipeline.serve.app import create_app, serve
from pipeline.serve.engine import CheckpointEngine, GenerationParams, load_engine
from pipeline.serve.live import AliasWatcher, LiveEngine

__all__ = ["AliasWatcher", "CheckpointEngine", "GenerationParams", "LiveEngine", "create_app", "load_engine", "serve"]
