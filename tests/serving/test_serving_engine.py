"""The real vLLM engine on the tiny model: 200 schema-constrained replies, a killed batch that
resumes from the journal, and a run in a process with no network at all."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from serving.chat.types import ChatRequest
from serving.journal import Journal, JournaledBackend

pytest.importorskip("vllm")
log = logging.getLogger(__name__)
HERE = Path(__file__).parent

SCHEMA = {
    "type": "object",
    "properties": {
        "ticker_a": {"type": "string", "maxLength": 8},
        "ticker_b": {"type": "string", "maxLength": 8},
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        # An integer with bounds, not a "number": a float has no bound on its digits, and a
        # random model writes 0.3333... until max_tokens (measured: 101 of 200 cut that way).
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reasons": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 2},
    },
    "required": ["ticker_a", "ticker_b", "action", "confidence", "reasons"],
    "additionalProperties": False,
}


def test_200_schema_constrained_replies(vllm_backend, tmp_path):
    reqs = [
        ChatRequest.simple(
            "tiny-qwen3",
            f"Pick the direction for pair {i}.",
            max_tokens=160,
            json_schema=SCHEMA,
            seed=i,
            temperature=0.7 if i % 2 else 0.0,
            call_type="direction",
        )
        for i in range(200)
    ]
    t0 = time.perf_counter()
    out = vllm_backend.chat(reqs)
    wall = time.perf_counter() - t0
    valid = 0
    for res in out:
        if res.is_fallback:
            assert res.parsed is None and res.parse_error
        else:
            jsonschema.validate(res.parsed, SCHEMA)
            valid += 1
    reasons = {}
    for res in out:
        if res.is_fallback:
            reasons[res.parse_error.split(":")[0]] = reasons.get(res.parse_error.split(":")[0], 0) + 1
    report = {
        "reasons": reasons,
        "requests": 200,
        "valid": valid,
        "fallbacks": 200 - valid,
        "wall_s": round(wall, 2),
        "completion_tokens": sum(r.usage.completion_tokens for r in out),
    }
    log.info("200-reply check: %s", report)
    (tmp_path / "schema200.json").write_text(json.dumps(report))
    # Guidance with compact JSON keeps every reply inside its bounded schema; a regression to a
    # backend that lets control characters or whitespace through shows up here.
    assert valid >= 195, report


def test_two_threads_share_the_running_engine_each_getting_its_own_replies(vllm_backend):
    """serving.engines.continuous on the real engine (the demo's path): two threads' calls in one engine,
    each call answered with its own requests' replies in order; a prompt over the context is that
    request's recorded fallback and the rest of its call still runs."""
    import threading

    from serving.engines.continuous import ContinuousEngine

    cont = ContinuousEngine(vllm_backend, close_engine=False)  # the session's engine stays open

    def reqs(tag: str, n: int) -> list[ChatRequest]:
        return [
            ChatRequest.simple(
                "tiny-qwen3", f"{tag} {i}", max_tokens=4 + 6 * i, json_schema=SCHEMA, seed=i, call_type=tag
            )
            for i in range(n)
        ]

    too_long = ChatRequest.simple("tiny-qwen3", "word " * 5000, max_tokens=4, call_type="b")
    calls = {"a": reqs("a", 3), "b": [*reqs("b", 2), too_long]}
    got: dict[str, list] = {}
    ts = [threading.Thread(target=lambda k=k: got.__setitem__(k, cont.chat(calls[k]))) for k in calls]
    try:
        for t in ts:
            t.start()
        for t in ts:
            t.join(300)
            assert not t.is_alive()
    finally:
        cont.close()
    for k, sent in calls.items():
        assert [r.request_key for r in got[k]] == [r.key() for r in sent]
    assert all(r.finish_reason in ("stop", "length") and r.usage.completion_tokens > 0 for r in got["a"])
    assert got["b"][2].finish_reason == "error" and "passes the context of" in got["b"][2].parse_error
    assert got["b"][0].finish_reason != "error" and cont.stats.calls == 2
    assert vllm_backend.chat(reqs("c", 1))[0].usage.completion_tokens > 0  # the engine still serves


@pytest.mark.slow  # an engine of its own in a child: the default suite kills journaled runs with -9
# in the Moira and matrix kill/resume tests (the same JournaledBackend, scripted model)
def test_killed_engine_batch_resumes_from_the_journal(vllm_backend, journal_child):
    """The child (started with the session, conftest.journal_child) runs its own engine; killed
    while its third chunk is in flight, the batch resumes from its journal on the session engine."""
    proc, journal, marker = journal_child.process, journal_child.journal, journal_child.marker
    n, chunk = journal_child.n, journal_child.chunk
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None and not marker.exists():
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    err = journal_child.log.read_text(errors="replace")[-2000:]
    assert proc.returncode == -signal.SIGKILL, f"worker ended on its own ({proc.returncode}): {err}"
    sys.path.insert(0, str(HERE))
    from _journal_worker import requests

    reqs = requests(n)
    with Journal(journal) as j:
        kept = j.count()
        assert kept == 2 * chunk  # two whole chunks committed; the one in flight is lost, no more
        jb = JournaledBackend(vllm_backend, j, chunk_size=chunk)
        out = jb.chat(reqs)
        assert jb.called == n - kept and jb.replayed == kept
        assert j.count() == n
    assert sum(r.from_journal for r in out) == kept
    assert [r.request_key for r in out] == [r.key() for r in reqs]
    again = JournaledBackend(vllm_backend, Journal(journal), chunk_size=chunk)
    assert again.chat(reqs) == out and again.called == 0
