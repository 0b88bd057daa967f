"""The authors' protocol rehearsed: every benchmark's every variant of ``finacumen_table1_authors``
(and of the leak ablation's arms) runs, and the first request of each run carries the authors'
system prompt read from their checkout, the pinned snapshot given as ``authors_code``.

The default suite runs the config's whole plan (its own datasets in their released layouts, the
bank build, the evaluations, the judge passes and checks, the report) on a scripted model at the
smallest size: the same property, in seconds. The slow suite rehearses the config and the leak
ablation through the in-process engine on the session's tiny Qwen3-VL (whose random replies call
no tool: their loop's no-tool rules end each run), as `localfin reproduce rehearse
finacumen_table1_authors --paths engine --size smallest --authors-code PATH` does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent.reproduce.qa_authors import with_authors_code
from agent.reproduce.spec import load_repro

ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT = ROOT.parent / "shared" / "vendor" / "FinAcumen-16246593c75e81fac0b57c05e739761dae3e6fe9"


def _snapshot() -> Path:
    if not (SNAPSHOT / "finacumen").is_dir():
        pytest.skip(f"the authors' code snapshot is absent ({SNAPSHOT})")
    return SNAPSHOT


def _config(name: str):
    (cfg,) = with_authors_code([load_repro(name)], _snapshot())
    return cfg


def _reply(req) -> str:
    """A scripted model that answers every call type of the authors' protocol."""
    call = req.call_type
    if call == "qa_solve":
        return '<tool_call>{"name": "terminate", "arguments": {"final_answer": "12.5"}}</tool_call>'
    if call == "bank_grade":
        n = len(re.findall(r"# --- Attempt #\d+", req.messages[-1].content))
        return "<Answer>" + json.dumps([{"score": 0.5, "reason": "close"}] * n) + "</Answer>"
    if call == "bank_summarize":
        body = {"analysis": "a", "findings": ["To x, do y."], "cautions": ["When z, check w."]}
        return f"<Answer>{json.dumps(body)}</Answer>"
    if call == "judge":
        return "YES"
    return "**Final Answer:** 12.5\nA chart of values 1 2 3 transcribed."


def test_every_variant_of_the_authors_table1_sends_their_system_prompt_first(tmp_path) -> None:
    from agent.reproduce.rehearse.authors_rehearsal import authors_checks, authors_texts
    from agent.reproduce.rehearse.qa_rehearsal import run_qa_rehearsal, stage_checks
    from agent.reproduce.rehearse.runs import SMALLEST
    from serving.registry import default_registry
    from serving.scripted import ScriptedBackend

    cfg = _config("finacumen_table1_authors")
    backend = ScriptedBackend(default=_reply)
    ran = run_qa_rehearsal(cfg, tmp_path, backend, default_registry(), size=SMALLEST, data_root=None)
    assert ran["error"] == ""
    bad = [c.detail for c in stage_checks("scripted", ran) if c.ok is False]
    assert bad == []
    from dataclasses import replace

    checks = authors_checks("scripted", replace(cfg, qa=ran["plan"]), tmp_path)
    assert checks and all(c.ok for c in checks), [c.detail for c in checks if not c.ok]
    variants = {c.seen["variant"] for c in checks}
    assert variants == {"base", "ft_fm", "bank"}
    assert len([c for c in checks if c.seen["variant"] == "ft_fm"]) == 6  # every benchmark setting
    names = {r["name"] for r in authors_texts(tmp_path)}
    read = {
        "base.system", "finacumen.system", "finacumen.policy", "ft_only.system", "ft_only.policy",
        "judge.prompt", "grading.prompt", "summary.prompt", "memory.open", "problem.open", "tool.ocr.prompt",
        "tool.terminate.parameters",
    }  # fmt: skip
    assert read <= names, sorted(read - names)
    tools = [r for r in backend.calls if r.call_type == "qa_solve"]
    assert tools and all(r.tools and r.tool_choice == "auto" and r.max_tokens == 1024 for r in tools)
    base = [r for r in backend.calls if r.call_type == "qa_base"]  # (the rehearsal shrinks their budget)
    assert base and all(r.temperature == 0.0 and r.json_schema is None for r in base)


@pytest.fixture(scope="module")
def engine_rehearsal(tmp_path_factory, shared_data: Path, vllm_vl_backend):
    from agent.reproduce.rehearse.rehearsal import Running, rehearse, write_rehearsal
    from agent.reproduce.rehearse.runs import SMALLEST
    from serving.registry import default_registry

    out = tmp_path_factory.mktemp("rehearsal_authors")
    cfgs = [_config("finacumen_table1_authors"), _config("finacumen_leak_ablation")]
    res = rehearse(
        cfgs, out, shared=shared_data, registry=default_registry(), paths=("engine",),
        running=Running(engines={"qwen3-vl": vllm_vl_backend}), size=SMALLEST, data_root=None,
    )  # fmt: skip
    md, _ = write_rehearsal(res, out)
    return res, md.read_text(encoding="utf-8"), out


@pytest.mark.slow
def test_the_engine_rehearsal_passes_and_every_run_sent_the_authors_system_prompt(engine_rehearsal) -> None:
    pytest.importorskip("vllm")
    res, md, _ = engine_rehearsal
    for name in ("finacumen_table1_authors", "finacumen_leak_ablation"):
        r = res[name]
        assert r.failed == [], [(c.name, c.detail) for c in r.failed]
        prompt_checks = [c for c in r.checks if c.name == "authors' prompt"]
        assert {c.seen["variant"] for c in prompt_checks} == {"base", "ft_fm", "bank"}
        assert all(c.ok for c in prompt_checks)
    assert "The authors' texts read from their checkout and sent (engine):" in md
    assert "| finacumen.system | finacumen/ft/variant/finacumen.py:30-148 | c59759a8818f91b2 | yes |" in md
