"""Thinking with a JSON schema, on the real engine and the real server (the core of every
Qwen3-thinking row of the papers' tables).

The tiny random Qwen3 never closes its thinking by itself, so a logit bias pushes ``</think>``;
at temperature 0 with ``enable_thinking=True`` the model's first choice is then ``</think>``
wherever the grammar allows it:

- with ``reasoning_parser="qwen3"`` (the registry's Qwen3 entries) the engine leaves the
  reasoning free and applies the grammar after ``</think>``: the raw reply is
  ``</think>{...}``, and our result keeps only the JSON as its text and parses it;
- without the parser the grammar applies from the first token: the reply is JSON at once and
  the model can never think.

In process the first case runs on the session engine (the bias is read per request, so the test
swaps it in) and the second on the session's second engine, whose spec has no parser (the parser is
an engine setting; tests/conftest.py ``alt_engine``, shared with the sampling tests); through
``vllm serve`` the session server answers, with the reasoning in ``message.reasoning``.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from serving.chat.types import ChatRequest
from serving.models.prepare import token_id

pytest.importorskip("vllm")

ACTIONS = ["LONG_SHORT", "SHORT_LONG", "FLAT"]
SCHEMA = {
    "type": "object",
    "properties": {"action": {"enum": ACTIONS}},
    "required": ["action"],
    "additionalProperties": False,
}
PROMPTS = ("Direction for pair KO/PEP?", "Spread z=-2.3, half-life 6. Which way?", "Q")


def _requests(**kw) -> list[ChatRequest]:
    kw.setdefault("max_tokens", 40)
    return [
        ChatRequest.simple("tiny-qwen3", p, thinking=True, json_schema=SCHEMA, call_type="direction", **kw)
        for p in PROMPTS
    ]


@pytest.fixture(scope="module")
def think_end(tiny_model_dir) -> int:
    return token_id(tiny_model_dir, "</think>")


@pytest.fixture()
def raw_replies(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The engine's raw text of every reply, as it reaches our parsing step."""
    import serving.engines.vllm_engine as vllm_engine

    seen: list[str] = []
    real = vllm_engine.build_result

    def spy(req, raw, **kw):
        seen.append(raw)
        return real(req, raw, **kw)

    monkeypatch.setattr(vllm_engine, "build_result", spy)
    return seen


def _assert_final_json_only(results) -> None:
    for res in results:
        assert not res.is_fallback, res
        assert res.finish_reason == "stop"
        assert json.loads(res.text) == res.parsed and res.parsed["action"] in ACTIONS
        assert "think>" not in res.text


def test_with_the_reasoning_parser_the_grammar_waits_for_the_end_of_thinking(
    vllm_backend, think_end, raw_replies, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert vllm_backend.spec.reasoning_parser == "qwen3"
    biased = replace(vllm_backend.options, logit_bias={think_end: 100.0})
    monkeypatch.setattr(vllm_backend, "options", biased)
    out = vllm_backend.chat(_requests())
    assert len(raw_replies) == len(PROMPTS)
    for raw, res in zip(raw_replies, out):
        assert raw.startswith("</think>"), raw  # the model thought (for no tokens), then answered
        assert raw.removeprefix("</think>") == res.text
    _assert_final_json_only(out)
    assert all(r.reasoning is None for r in out)  # an empty thinking block leaves no reasoning


def test_without_the_reasoning_parser_the_reply_is_json_from_the_first_token(
    alt_engine, think_end, raw_replies, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = alt_engine.backend  # the session's engine whose spec has no reasoning parser
    assert backend.spec.reasoning_parser is None
    monkeypatch.setattr(backend, "options", replace(backend.options, logit_bias={think_end: 100.0}))
    out = backend.chat(_requests())
    assert [r.text for r in out] == raw_replies  # nothing to split: no </think> anywhere
    assert all(raw.startswith("{") for raw in raw_replies), raw_replies
    _assert_final_json_only(out)


@pytest.fixture()
def server_client(openai_server, tiny_registry, think_end):
    from serving.http.openai_http import OpenAIBackend

    client = OpenAIBackend(
        openai_server.base_url,
        registry=tiny_registry,
        api_key="test-key",
        max_retries=1,
        logit_bias={think_end: 100.0},
    )
    yield client
    client.close()


def test_the_server_splits_reasoning_and_applies_the_grammar_after_it(
    openai_server, server_client, think_end
) -> None:
    import httpx

    # the body OpenAIBackend sends for _requests()[0], plus the tokens of the reply
    body = {
        "model": "tiny-qwen3",
        "messages": [{"role": "user", "content": PROMPTS[0]}],
        "max_tokens": 40,
        "temperature": 0.0,
        "seed": 0,
        "chat_template_kwargs": {"enable_thinking": True},
        "structured_outputs": {"json": SCHEMA},
        "logit_bias": {str(think_end): 100.0},
        "logprobs": True,
    }
    resp = httpx.post(
        f"{openai_server.base_url}/chat/completions",
        json=body,
        headers={"Authorization": "Bearer test-key"},
        timeout=120,
        trust_env=False,
    )
    assert resp.status_code == 200, resp.text
    choice = resp.json()["choices"][0]
    tokens = [t["token"] for t in choice["logprobs"]["content"]]
    assert tokens[0] == "</think>", tokens  # thinking first, then the grammar
    msg = choice["message"]
    assert json.loads(msg["content"]) in [{"action": a} for a in ACTIONS]
    assert not msg.get("reasoning") and "reasoning_content" not in msg  # vLLM 0.32's field name

    out = server_client.chat(_requests())
    _assert_final_json_only(out)
    assert out[0].text == msg["content"]


def test_the_server_returns_the_reasoning_of_a_cut_reply_apart(openai_server, tiny_registry) -> None:
    from serving.http.openai_http import OpenAIBackend

    client = OpenAIBackend(openai_server.base_url, registry=tiny_registry, api_key="test-key", max_retries=1)
    try:
        [res] = client.chat(_requests(max_tokens=8)[:1])
    finally:
        client.close()
    # No bias: the random model never closes its thinking, so all 8 tokens are reasoning.
    assert res.finish_reason == "length" and res.is_fallback and res.parsed is None
    assert res.text == "" and res.reasoning
    assert res.usage.completion_tokens == 8


def test_the_engine_reads_a_cut_thinking_reply_as_the_server_does(
    vllm_backend, tiny_model_dir, raw_replies, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thinking reply cut at max_tokens with no think tags, in process: it is reasoning, not
    answer text (as the server's parser reads it). A bias on the letter ``a`` makes the raw text
    visible and tagless whatever the random weights prefer."""
    from agent.pairs.moira.calls import _usable

    biased = replace(vllm_backend.options, logit_bias={token_id(tiny_model_dir, "a"): 100.0})
    monkeypatch.setattr(vllm_backend, "options", biased)
    [res] = vllm_backend.chat(_requests(max_tokens=8)[:1])
    [raw] = raw_replies
    assert raw.strip() == "a" * 8 and "think>" not in raw
    assert res.finish_reason == "length" and res.is_fallback and res.parsed is None
    assert res.text == "" and res.reasoning == raw.strip()
    assert "while thinking" in res.parse_error
    assert _usable(res) == "cut at max_tokens"  # the agent records it as a fallback
