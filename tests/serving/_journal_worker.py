"""Child process for the kill test: runs a journaled batch on the real engine (not a test)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from serving.chat.types import ChatRequest
from serving.engines.vllm_engine import EngineOptions, VLLMBackend
from serving.journal import Journal, JournaledBackend
from serving.models.registry import default_registry

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 24}},
    "required": ["answer"],
    "additionalProperties": False,
}


def requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest.simple(
            "tiny-qwen3", f"item {i}", max_tokens=48, json_schema=SCHEMA, seed=i, call_type="test"
        )
        for i in range(n)
    ]


class _Gate:
    """Passes calls to the engine; the third call announces itself in a file and never returns.

    The test kills the process while that call is in flight, so the kill lands after exactly two
    committed chunks however fast the machine generates (a bare race once let all 24 finish).
    """

    def __init__(self, inner: VLLMBackend, marker: Path) -> None:
        self.inner, self.marker, self.calls = inner, marker, 0
        self.name = inner.name

    def chat(self, reqs):
        self.calls += 1
        if self.calls == 3:
            self.marker.write_text("in flight")
            time.sleep(3600)
        return self.inner.chat(reqs)

    def close(self) -> None:
        self.inner.close()


def main(model_dir: str, journal_path: str, n: int, chunk: int, marker: str) -> None:
    reg = default_registry()
    reg = reg.with_spec(reg.get("tiny-qwen3").with_path(model_dir))
    backend = VLLMBackend("tiny-qwen3", registry=reg, options=EngineOptions(kv_cache_gib=1))
    with Journal(journal_path) as j:
        JournaledBackend(_Gate(backend, Path(marker)), j, chunk_size=chunk).chat(requests(n))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
