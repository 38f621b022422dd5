"""One client for OpenAI-compatible chat-completions endpoints (agents, LLM customers, the judge), and its wire
format."""
