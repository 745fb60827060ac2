"""The model gateway: OpenAI-compatible endpoints at /llm/v1 (see gateway.py)."""
