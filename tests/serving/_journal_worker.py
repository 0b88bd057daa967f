"""Child process for the kill test: runs a journaled batch on the real engine (not a test)."""

from __future__ import annotations

import sys

from serving.journal import Journal, JournaledBackend
from serving.registry import default_registry
from serving.types import ChatRequest
from serving.vllm_engine import EngineOptions, VLLMBackend

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 24}},
          "required": ["answer"], "additionalProperties": False}


def requests(n: int) -> list[ChatRequest]:
    return [ChatRequest.simple("tiny-qwen3", f"item {i}", max_tokens=48, json_schema=SCHEMA,
                               seed=i, call_type="test") for i in range(n)]


def main(model_dir: str, journal_path: str, n: int, chunk: int) -> None:
    reg = default_registry()
    reg = reg.with_spec(reg.get("tiny-qwen3").with_path(model_dir))
    backend = VLLMBackend("tiny-qwen3", registry=reg, options=EngineOptions(kv_cache_gib=1))
    with Journal(journal_path) as j:
        JournaledBackend(backend, j, chunk_size=chunk).chat(requests(n))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
