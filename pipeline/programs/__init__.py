"""Agent programs: agents that run their own tool loop, driven per episode through MCP and a model proxy."""

__all__: list[str] = []
