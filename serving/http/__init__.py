"""Models over HTTP: starting and stopping an OpenAI-compatible vLLM server
(:mod:`~serving.http.server`) and the backend that calls any such server
(:mod:`~serving.http.openai_http`)."""

from __future__ import annotations

__all__: list[str] = []
