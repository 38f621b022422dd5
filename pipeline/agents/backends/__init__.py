"""Model backends an agent spec names: local transformers checkpoints, vLLM, OpenAI-compatible endpoints."""
