"""One contract, three backends: scripted, the real vLLM engine, and the HTTP client against a
real vLLM server on loopback. Every backend must honour the same interface."""

from __future__ import annotations

import json

import jsonschema
import pytest

from serving.chat.scripted import ScriptedBackend
from serving.chat.types import ChatRequest, Message

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "reason": {"type": "string", "maxLength": 40},
    },
    "required": ["action", "confidence", "reason"],
    "additionalProperties": False,
}


def scripted_reply(req: ChatRequest) -> str:
    if req.json_schema is None:
        return "a plain answer"
    return json.dumps({"action": "FLAT", "confidence": 50, "reason": req.messages[-1].content[:40]})


@pytest.fixture(params=["scripted", "vllm", "openai"])
def backend(request, tiny_registry):
    if request.param == "scripted":
        yield ScriptedBackend(default=scripted_reply)
    elif request.param == "vllm":
        yield request.getfixturevalue("vllm_backend")
    else:
        from serving.http.openai_http import OpenAIBackend

        server = request.getfixturevalue("openai_server")
        client = OpenAIBackend(
            server.base_url, registry=tiny_registry, api_key="test-key", max_concurrency=4, max_retries=1
        )
        yield client
        client.close()


def ask(text: str, **kw) -> ChatRequest:
    kw.setdefault("max_tokens", 96)
    return ChatRequest(
        model="tiny-qwen3", messages=(Message("system", "Answer in JSON."), Message("user", text)), **kw
    )


def test_results_in_order_with_keys_and_provenance(backend):
    reqs = [ask(f"pair {i}: direction?", json_schema=SCHEMA, seed=i, call_type="direction") for i in range(6)]
    out = backend.chat(reqs)
    assert len(out) == len(reqs)
    for req, res in zip(reqs, out):
        assert res.request_key == req.key()
        assert res.model == "tiny-qwen3" and res.call_type == "direction"
        assert res.backend == backend.name and res.latency_s >= 0
        assert res.usage.prompt_tokens > 0 and 0 < res.usage.completion_tokens <= req.max_tokens
        assert res.finish_reason in ("stop", "length")


def test_schema_replies_are_valid_or_recorded_fallbacks(backend):
    out = backend.chat([ask(f"q{i}", json_schema=SCHEMA, seed=i) for i in range(8)])
    for res in out:
        if res.is_fallback:
            assert res.parse_error and res.parsed is None
        else:
            jsonschema.validate(res.parsed, SCHEMA)
            assert json.loads(res.text) == res.parsed
    assert sum(not r.is_fallback for r in out) == 8  # compact-JSON guidance decoding: all valid


def test_a_reply_cut_at_max_tokens_is_a_fallback(backend):
    res = backend.chat([ask("cut me", json_schema=SCHEMA, max_tokens=3)])[0]
    assert res.finish_reason == "length" and res.is_fallback and res.parsed is None


def test_greedy_is_deterministic_and_thinking_is_kept_apart(backend):
    a = backend.chat([ask("same", json_schema=SCHEMA)])[0]
    b = backend.chat([ask("same", json_schema=SCHEMA)])[0]
    assert a.text == b.text
    t = backend.chat([ask("think first", thinking=True, max_tokens=24)])[0]
    assert "<think>" not in t.text and "</think>" not in t.text


def test_plain_text_requests_are_not_parsed(backend):
    res = backend.chat([ask("say something", max_tokens=12)])[0]
    assert res.parsed is None and res.parse_error is None
    assert res.is_fallback == (res.finish_reason == "length")
