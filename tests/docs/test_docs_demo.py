"""docs/demo.md quotes the demo's own figures: its sentence on what the model does (engine calls,
lock-step rounds, prompt and completion tokens of each part, tokens per question of each QA
variant, memory hits, the causality audit) is regenerated here from a run of the demo and must
be the page's word for word (the demo is reproducible: seeded requests, float32 on the CPU), and
its heartbeat example counts the sessions the demo's heartbeats count. Marked slow: it runs the
demo (once per session, shared with the docs-examples test)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from docs_examples import ROOT, TIMEOUT_S, base_env

#: the demo runs in the first test's setup: its own time, beyond the suite's per-test limit
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * TIMEOUT_S["slow"])]

PAGE = ROOT / "docs" / "demo.md"


def figures_sentence(demo: Path) -> str:
    """What docs/demo.md says the demo's model does, from the files of the demo folder ``demo``."""
    from serving.journal import Journal

    summary = json.loads((demo / "moira" / "summary.json").read_text(encoding="utf-8"))
    engine = summary["tokens_by_call_type_engine"]
    m_prompt = sum(r["prompt_tokens"] for r in engine)
    m_completion = sum(r["completion_tokens"] for r in engine)
    q_calls = q_prompt = q_completion = 0
    for path in sorted((demo / "qa").rglob("journal.sqlite")):
        journal = Journal(path)
        try:
            for row in journal.token_summary():
                q_calls += row.calls
                q_prompt += row.prompt_tokens
                q_completion += row.completion_tokens
        finally:
            journal.close()
    qa = json.loads((demo / "qa" / "qa_report.json").read_text(encoding="utf-8"))["variants"]
    per = {k: f"{round(v['mean_total_tokens']):,}" for k, v in qa.items()}
    hits = round(100 * qa["ft_fm"]["memory_hit_rate"])
    audit = (
        subprocess.run(
            [str(ROOT / ".venv" / "bin" / "localfin"), "audit", str(demo / "moira")],
            env=base_env(demo.parent),
            capture_output=True,
            text=True,
            check=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    runs, calls, violations = map(
        int, re.fullmatch(r"(\d+) runs, (\d+) model calls audited, (\d+) violation\(s\)", audit).groups()
    )
    return (
        f"What the demo's model does, per part (from its journals): Moira {summary['model_calls']} engine "
        f"calls in {summary['lockstep_rounds']} lock-step rounds, {m_prompt:,} prompt and {m_completion:,} "
        f"completion tokens; QA {q_calls} engine calls, {q_prompt:,} prompt and {q_completion:,} completion "
        f"tokens (Base {per['base']} tokens a question, Base+FT {per['ft']}, Base+FT+FM {per['ft_fm']}, "
        f"memory hits {hits} %). `localfin audit reports/demo/moira` checks {runs} runs and {calls} model "
        f"calls with {violations} violations ([Causality audit](audit.md))."
    )


def test_the_demo_page_quotes_the_demos_own_figures(demo_dir: Path) -> None:
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    want = figures_sentence(demo_dir)
    assert want in page, f"docs/demo.md should say, from this run of the demo:\n{want}"


def test_the_heartbeat_example_counts_the_demos_sessions(demo_dir: Path) -> None:
    printed = (demo_dir.parent / "demo.out").read_text(encoding="utf-8")
    totals = set(re.findall(r"Moira / sessions: \d+/(\d+)", printed))
    example = re.findall(r"Moira / sessions: \d+/(\d+)", PAGE.read_text(encoding="utf-8"))
    assert example and len(totals) == 1 and set(example) == totals, (example, totals)


@pytest.mark.parametrize("screen", [(1280, 800), (390, 844)], ids=["desktop", "phone"])
def test_the_demo_reports_first_screen_names_the_best_run_and_what_the_model_can_show(
    demo_dir: Path, page_layout, screen: tuple[int, int]
) -> None:
    """The report of `localfin demo`, opened in Chromium: the model caveat and the best-run line
    are on its first screen, and no accepted principle is rendered as markup."""
    page = demo_dir / "report" / "index.html"
    got = page_layout(page, *screen)
    roles = got["roles"]
    for role in ("caveat", "best"):
        assert role in roles and roles[role]["bottom"] <= got["height"], (role, roles, got["height"])
    assert "SmolLM2-135M-Instruct (smollm2-135m)" in roles["caveat"]["text"]
    assert roles["best"]["text"].startswith("Best run per metric")
    html = page.read_text(encoding="utf-8")
    accepted = html.split('data-mechanism="gate_accept"')[1].split("</tr>")[0]
    assert '<ol class="texts">' in accepted, "the accepted principles are listed"
    assert "<b>" not in accepted and "<script" not in accepted
