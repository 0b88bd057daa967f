"""Serving: one narrow chat interface over vLLM (in-process or HTTP) and a scripted test backend.

Kept cheap to import: vllm, torch and transformers are imported inside the functions that
need them.
"""

from __future__ import annotations

from serving.errors import (
    BackendError,
    ConfigError,
    JournalError,
    LocalfinError,
    ModelNotPreparedError,
    ModelOutputError,
)

__all__ = [
    "BackendError",
    "ConfigError",
    "JournalError",
    "LocalfinError",
    "ModelNotPreparedError",
    "ModelOutputError",
]
