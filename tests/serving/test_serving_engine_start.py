"""An in-process engine's start and requests around vLLM (serving/engines/vllm_engine.py), with vLLM's
``LLM`` replaced by a recording stand-in (no engine starts): the environment is put back whole
after each start, each engine's tokenizer is encoded once before any thread uses it, and a
prompt whose tokens plus ``max_tokens`` pass the context is refused before the call."""

from __future__ import annotations

import os
import sys
import types
from typing import Any

import pytest

from localfin import env
from serving.chat.types import ChatRequest, Message
from serving.engines import vllm_engine
from serving.models.registry import default_registry

Backend = vllm_engine.VLLMBackend  # started here only with the stand-in below


class _Tokenizer:
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def encode(self, text: str) -> list[int]:
        self.log.append("encode")
        return [1] * len(text.split())

    def apply_chat_template(self, conv: list[dict[str, Any]], **kw: Any) -> list[int]:
        return [1] * sum(len(str(m["content"]).split()) for m in conv)


def _fake_vllm(monkeypatch: pytest.MonkeyPatch, log: list[str]) -> None:
    """A ``vllm`` module whose ``LLM`` sets what vLLM sets in the parent while it starts."""

    class LLM:
        def __init__(self, **kwargs: Any) -> None:
            log.append(f"start {kwargs['max_model_len']} {os.environ.get('VLLM_USE_BREAKABLE_CUDAGRAPH')}")
            os.environ["VLLM_USE_BREAKABLE_CUDAGRAPH"] = "1"  # vLLM's batch-invariant mode sets it
            os.environ["LD_PRELOAD"] = "/vllm/adds/this.so"
            self.tok = _Tokenizer(log)

        def get_tokenizer(self) -> _Tokenizer:
            return self.tok

        def get_default_sampling_params(self) -> Any:
            from serving.chat.sampling import NEUTRAL

            return types.SimpleNamespace(**NEUTRAL)

        def chat(self, convs: list[Any], params: list[Any], **kw: Any) -> list[Any]:
            log.append(f"chat {len(convs)}")
            out = types.SimpleNamespace(text="ok", token_ids=[1], finish_reason="stop")
            return [
                types.SimpleNamespace(outputs=[out], prompt_token_ids=[1], num_cached_tokens=0) for _ in convs
            ]

    mod = types.ModuleType("vllm")
    mod.LLM = LLM
    mod.SamplingParams = lambda **kw: kw
    sp = types.ModuleType("vllm.sampling_params")
    sp.StructuredOutputsParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", mod)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sp)


def _backend(**options: Any) -> Any:
    spec = default_registry().get("smollm2-135m")
    try:
        spec.resolve_path()
    except Exception:  # noqa: BLE001
        pytest.skip("smollm2-135m is not prepared (localfin models prepare smollm2-135m)")
    return Backend("smollm2-135m", options=vllm_engine.EngineOptions(**options))


def test_the_environment_is_put_back_whole_after_every_engine_start(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    _fake_vllm(monkeypatch, log)
    monkeypatch.delenv("VLLM_USE_BREAKABLE_CUDAGRAPH", raising=False)
    monkeypatch.delenv("VLLM_BATCH_INVARIANT", raising=False)
    monkeypatch.setenv("LD_PRELOAD", "/opt/keep.so")
    for k, v in env.offline_env().items():  # forced for the whole process (on purpose)
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "2")
    before = dict(os.environ)
    first = _backend(batch_invariant=True)
    first.start()
    assert dict(os.environ) == before  # VLLM_BATCH_INVARIANT, vLLM's own variables: all gone
    second = _backend(max_model_len=4096)
    second.start()
    # the second engine did not inherit what the first one's start set
    assert [e for e in log if e.startswith("start")] == ["start 8192 None", "start 4096 None"]
    assert dict(os.environ) == before


def test_each_engine_encodes_once_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    _fake_vllm(monkeypatch, log)
    be = _backend()
    be.start()
    assert log[:2] == ["start 8192 None", "encode"]


def test_a_prompt_past_the_context_is_refused_before_the_call_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    log: list[str] = []
    _fake_vllm(monkeypatch, log)
    be = _backend(max_model_len=1024)
    fits = ChatRequest(model="smollm2-135m", messages=(Message("user", "word " * 100),), max_tokens=900)
    over = ChatRequest(model="smollm2-135m", messages=(Message("user", "word " * 200),), max_tokens=900)
    out = be.chat([fits, over])
    assert out[0].finish_reason == "stop" and out[1].finish_reason == "error"
    assert "prompt of 200 tokens + max_tokens 900 = 1,100 passes the context of 1,024 tokens" in (
        out[1].parse_error or ""
    )
    assert "EngineOptions.max_model_len" in out[1].parse_error
    assert [e for e in log if e.startswith("chat")] == ["chat 1"]  # only the one that fits was sent
