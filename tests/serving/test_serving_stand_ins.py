"""GPU backbones on the CPU: each architecture's tiny random stand-in served by vLLM with the
real registry entry's settings (its key, parsers, thinking default, 32,768-token context,
16,384-token completion budget, images). Slow: one engine start per architecture."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vl_support import SIZES, hf_prompt_ids, png_url

from serving.chat.types import ChatRequest, Message

pytestmark = pytest.mark.slow
pytest.importorskip("vllm")

SCHEMA = {
    "type": "object",
    "properties": {
        "action": {"enum": ["LONG_SHORT", "SHORT_LONG", "FLAT"]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
    },
    "required": ["action", "confidence"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("key", ["llama-3.1-8b", "qwen3-4b", "qwen3-vl-8b"])
def test_the_tiny_stand_in_serves_with_the_real_settings(key: str, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from serving.engines.vllm_engine import EngineOptions, VLLMBackend
    from serving.models.prepare import build_tiny_model, token_id
    from serving.models.registry import cpu_stand_in, default_registry

    reg = default_registry()
    real = reg.get(key)
    path = build_tiny_model(tmp_path / key, arch=real.arch, max_position_embeddings=real.max_model_len)
    twin = cpu_stand_in(real, path)
    bias = {token_id(path, "</think>"): 100.0} if real.reasoning_parser else {}
    backend = VLLMBackend(
        key,
        registry=reg.with_spec(twin),
        options=EngineOptions(kv_cache_gib=1, max_num_seqs=8, logit_bias=bias),
    )
    images: tuple[str, ...] = ()
    if real.accepts_images:
        images = tuple(png_url(*s) for s in SIZES)
    req = ChatRequest(
        model=key,
        messages=(Message("system", "Answer in JSON."), Message("user", "Direction for the pair?", images)),
        max_tokens=real.default_max_tokens,
        json_schema=SCHEMA,
        call_type="direction",
    )
    try:
        [res] = backend.chat([req])
    finally:
        backend.close()
    assert backend.options.logit_bias == bias
    assert not res.is_fallback, res
    assert json.loads(res.text) == res.parsed and "think>" not in res.text
    if not images:  # the prompt the engine saw is the model's own template, tokenized
        tok = AutoTokenizer.from_pretrained(path)
        thinking = {"enable_thinking": real.thinking_default} if real.thinking_default is not None else {}
        ids = tok.apply_chat_template(
            [m.to_openai() for m in req.messages], add_generation_prompt=True, tokenize=True, **thinking
        )
        ids = ids["input_ids"] if hasattr(ids, "keys") else ids
        assert res.usage.prompt_tokens == len(ids)
    else:
        assert res.usage.prompt_tokens == len(hf_prompt_ids(path, req))
