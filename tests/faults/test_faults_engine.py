"""The in-process engine fails: one request raises inside vLLM (a prompt over the context, on
the real tiny engine), or the engine starts failing every request (an exception injected from
call N on, through a proxy of the session engine). One failing request is its recorded fallback
with the engine's reason, never journaled, and the other requests of its batch go on; failures
in a row stop the run (BackendError, exit code 1) with every answered call journaled, and the
resumed run ends with the uninterrupted run's replies."""

from __future__ import annotations

from typing import Any

import pytest

from serving.chat.types import ChatRequest
from serving.engines.vllm_engine import EngineOptions, VLLMBackend
from serving.errors import BackendError
from serving.journal import Journal, JournaledBackend

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 8}},
    "required": ["answer"],
    "additionalProperties": False,
}


def _req(i: int, text: str | None = None) -> ChatRequest:
    return ChatRequest.simple(
        "tiny-qwen3",
        text or f"question {i}",
        max_tokens=12,
        json_schema=SCHEMA,
        temperature=0.0,
        seed=i,
        thinking=False,
        call_type="direction",
    )


def _replies(results: list[Any]) -> list[tuple[str, str]]:
    return [(r.finish_reason, r.text) for r in results]


def test_a_prompt_over_the_context_is_its_fallback_and_the_batch_goes_on(vllm_backend, tmp_path):
    good = [_req(i) for i in range(3)]
    too_long = _req(9, "word " * 5000)  # about 5,000 tokens, over the tiny engine's context
    alone = vllm_backend.chat(good)  # the uninterrupted replies of the good requests
    with Journal(tmp_path / "j.sqlite") as j:
        jb = JournaledBackend(vllm_backend, j)
        out = jb.chat([good[0], too_long, good[1], good[2]])
        assert out[1].finish_reason == "error" and out[1].is_fallback
        # refused before the call, naming the setting that bounds it (a server's HTTP 400)
        assert "passes the context of" in out[1].parse_error and "max_model_len" in out[1].parse_error
        assert _replies([out[0], out[2], out[3]]) == _replies(alone)
        assert j.count() == 3 and jb.called == 4  # the fallback is not journaled
        again = JournaledBackend(vllm_backend, j)  # a rerun (resume)
        out2 = again.chat([good[0], too_long, good[1], good[2]])
        assert again.replayed == 3 and again.called == 1  # only the failed call is sent again
        assert _replies(out2) == _replies(out)


class _Flaky:
    """The session's ``vllm.LLM`` with an exception for every ``chat`` from the ``start``-th on
    (``None``: healthy), as an engine that broke mid-run (a CUDA error, say)."""

    def __init__(self, llm: Any, start: int | None) -> None:
        self._llm, self.start, self.calls = llm, start, 0

    def chat(self, *args: Any, **kwargs: Any) -> Any:
        self.calls += 1
        if self.start is not None and self.calls >= self.start:
            raise RuntimeError("CUDA error: an illegal memory access was encountered (injected)")
        return self._llm.chat(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)


def _backend(vllm_backend: Any, registry: Any, start: int | None) -> VLLMBackend:
    """A backend of our own on the session's running engine (nothing of the session's changes)."""
    be = VLLMBackend("tiny-qwen3", registry=registry, options=EngineOptions(max_failures_in_a_row=3))
    be._llm = _Flaky(vllm_backend._engine(), start)
    return be


def test_an_engine_that_fails_every_request_stops_the_run_and_resume_completes(
    vllm_backend, tiny_registry, tmp_path
):
    reqs = [_req(i) for i in range(8)]
    reference = _backend(vllm_backend, tiny_registry, None).chat(reqs)  # uninterrupted
    with Journal(tmp_path / "j.sqlite") as j:
        broken = _backend(vllm_backend, tiny_registry, start=2)  # fails from its 2nd engine call on
        with pytest.raises(BackendError, match="failed 3 requests in a row") as err:
            JournaledBackend(broken, j, chunk_size=2).chat(reqs)
        assert "CUDA error" in str(err.value) and "rerun with --resume" in str(err.value)
        assert j.count() == 2  # the first chunk, answered before the engine broke: 0 lost
        healthy = JournaledBackend(_backend(vllm_backend, tiny_registry, None), j, chunk_size=2)
        out = healthy.chat(reqs)
        assert healthy.replayed == 2 and healthy.called == 6  # only the calls never answered
    assert _replies(out) == _replies(reference)
