"""The paper's variants (FinAcumen G.2): Base is the model alone, so its request carries no OCR
transcription (a vision backbone gets the images themselves, a text-only one only the text and
the images it cannot see are counted); Base+FT lists the paper's four tools (Python in the
sandbox, lookup over a market store, OCR + reparse_image, the answer gate's final_answer)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.evaluation.evaluate import EvalConfig, evaluate, image_only
from agent.qa.sandbox import SandboxUnavailable, probe
from agent.qa.solver.react import SolverConfig
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest

_MARK = "TRANSCRIBED-7731"  # what the fake OCR returns: it must never reach a Base request
_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15"
    b"\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00"
    b"\x00IEND\xaeB`\x82"
)


def _items(tmp_path: Path) -> list[QAItem]:
    img = tmp_path / "chart.png"
    img.write_bytes(_PNG)
    qs = [
        Question("with-text", "demo", "What is revenue in 2019?", context="Revenue 2019: 12.5\n<image 1>",
                 images=(str(img),)),
        Question("image-only", "demo", "What is the last bar?", context="<image 1>", images=(str(img),)),
        Question("text-only", "demo", "What is cost in 2019?", context="Cost 2019: 3.5"),
    ]  # fmt: skip
    return [QAItem(q, Gold(1.0, extra={"abs_tol": 0.005}), "test") for q in qs]


def _answering() -> ScriptedBackend:
    def reply(req: ChatRequest) -> str:
        props = (req.json_schema or {}).get("properties", {})
        if req.call_type == "qa_base" and req.json_schema is None:
            return "It reads 1.\nAnswer: 1"
        if "reasoning" in props:
            return json.dumps({"reasoning": "read", "answer": "1"})
        if "plan" in props:
            return json.dumps({"inputs": "a", "experience": "b", "plan": "c"})
        return json.dumps({"thought": "t", "action": "final_answer", "args": {"answer": "1"}})

    return ScriptedBackend([Rule("qa_solve", reply), Rule("qa_base", reply)])


def _text(req: ChatRequest) -> str:
    return "\n".join(m.content for m in req.messages)


@pytest.mark.parametrize("vision", [False, True])
def test_base_requests_hold_no_transcription(tmp_path: Path, vision: bool) -> None:
    items = _items(tmp_path)
    ocr_calls: list[str] = []

    def transcriber(path: str) -> str:
        ocr_calls.append(path)
        return f"{_MARK} 99.5"

    cfg = SolverConfig(model="m", send_images=vision)
    backend = _answering()
    s = evaluate(items, backend, tmp_path / "base", EvalConfig("base", cfg), transcriber=transcriber)
    reqs = backend.calls
    assert len(reqs) == 3 and not ocr_calls  # Base never runs OCR
    assert not any(_MARK in _text(r) for r in reqs)
    images = {r.messages[-1].content.split("\n")[0]: r.messages[-1].images for r in reqs}
    with_img = images["Question: What is revenue in 2019?"]
    if vision:  # a vision backbone sees the images themselves
        assert len(with_img) == 1 and with_img[0].startswith("data:image/png;base64,")
        assert s.images_unseen == 0 and s.image_only_unseen == 0
    else:  # a text-only backbone gets the text only; the questions whose images it cannot see are counted
        assert with_img == ()
        assert s.with_images == 2 and s.images_unseen == 2 and s.image_only_unseen == 1
    assert images["Question: What is cost in 2019?"] == ()
    # the tools variant does get the transcriptions (the test above can fail)
    backend = _answering()
    ft = evaluate(
        items, backend, tmp_path / "ft", EvalConfig("ft", cfg), tools=lambda q: [], transcriber=transcriber
    )
    assert any(_MARK in _text(r) for r in backend.calls) and ft.images_unseen == 0


def test_image_only_reads_the_context_without_image_marks(tmp_path: Path) -> None:
    a, b, c = (it.question for it in _items(tmp_path))
    assert not image_only(a) and image_only(b) and not image_only(c)


@pytest.fixture(scope="module")
def sandbox_ok() -> None:
    try:
        probe()
    except SandboxUnavailable as exc:
        pytest.skip(f"no sandbox on this machine: {exc}")


def test_ft_request_lists_the_four_tools(
    tmp_path: Path, synthetic_store_path: Path, sandbox_ok: None
) -> None:
    """With a market store and a working sandbox, a question with an image gets python, lookup
    and reparse_image, and the answer gate's final_answer: the paper's four tools."""
    items = _items(tmp_path)[:1]
    factory = tool_factory(
        ToolsetConfig(names=("python", "lookup", "reparse"), store_path=synthetic_store_path)
    )
    backend = _answering()
    s = evaluate(
        items, backend, tmp_path / "ft", EvalConfig("ft", SolverConfig(model="m")), tools=factory,
        transcriber=lambda p: "read",
    )  # fmt: skip
    plan, act = backend.calls[0], backend.calls[1]
    listed = [
        line.split(":")[0][2:] for line in plan.messages[0].content.splitlines() if line.startswith("- ")
    ]
    assert listed == ["python", "lookup", "reparse_image", "final_answer"]
    actions = [o["properties"]["action"]["enum"][0] for o in act.json_schema["anyOf"]]
    assert actions == ["python", "lookup", "reparse_image", "final_answer"]
    man = json.loads((tmp_path / "ft" / "manifest.json").read_text(encoding="utf-8"))
    assert man["tools"] == ["python", "lookup", "reparse_image"] and s.n == 1
