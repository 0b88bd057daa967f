"""The prompt checklist (docs/moira_prompt_checklist.yaml): every rule and input of the Moira
paper's Appendix A is carried by a line of our prompt files or payload builders. The test fails
when a listed text is gone, and shows that it would: a prompt with one rule's line removed is
reported missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agent.pairs.moira.checklist import load_checklist, locate, render_markdown

ROOT = Path(__file__).resolve().parents[3]
CHECKLIST = ROOT / "docs" / "moira_prompt_checklist.yaml"
PROMPTS = ("pairs_select", "pairs_direction", "pairs_reflect", "pairs_break", "pairs_news_verify")


@pytest.fixture(scope="module")
def entries():
    return load_checklist(CHECKLIST)


def test_every_listed_rule_and_input_is_in_its_file(entries) -> None:
    found = locate(entries, ROOT)
    missing = [f"{x.entry.id}: {x.entry.text!r} not in {x.file}" for x in found if not x.ok]
    assert not missing, "\n".join(missing)


def test_every_appendix_prompt_and_payload_has_rows(entries) -> None:
    by = {}
    for e in entries:
        by.setdefault(e.id.split("-")[0], []).append(e)
    assert set(by) == {"A.1", "A.2", "A.3", "A.4", "A.5", "A.6"}
    # A.2's eleven inputs to consider, A.4's rules, A.6's break payload fields (14)
    assert sum(e.kind == "input" and "consider" in e.point for e in by["A.2"]) == 11
    assert sum("break payload" in e.point for e in by["A.6"]) == 13  # current_step with pair
    # the runtime instruction is in every one of the five prompts
    for e in by["A.6"][:8]:
        assert {Path(w).stem for w in e.where} == set(PROMPTS), e.id


def test_the_rendered_table_lists_every_entry(entries) -> None:
    text = (ROOT / "docs" / "moira_prompt_checklist.md").read_text(encoding="utf-8")
    for e in entries:
        assert f"| {e.id} | {e.kind} |" in text, e.id
    assert "MISSING" not in text
    assert render_markdown(locate(entries, ROOT)).count("\n| A.") == text.count("\n| A.")


def test_a_rule_whose_line_is_removed_is_reported_missing(entries, tmp_path: Path) -> None:
    # a copy of the repository's prompt files with the BREAK rule of A.2 deleted
    for d in ("agent/prompts", "agent/pairs/moira", "agent/pairs/lifecycle"):
        shutil.copytree(ROOT / d, tmp_path / d)
    f = tmp_path / "agent/prompts/pairs_direction.yaml"
    lines = f.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = [line for line in lines if "does not force FLAT, does not forbid trading" not in line]
    assert len(cut) == len(lines) - 1
    f.write_text("".join(cut), encoding="utf-8")
    found = {(x.entry.id, x.file): x for x in locate(entries, tmp_path)}
    assert not found[("A.2-31", "agent/prompts/pairs_direction.yaml")].ok
    assert found[("A.2-30", "agent/prompts/pairs_direction.yaml")].ok
    assert "(MISSING)" in render_markdown(list(found.values()))


# A.6 fixes these words: the blocks appended "exactly as follows", the runtime instruction's
# "from model pretraining" and the reflection payload's keys. Our wording elsewhere is our own.
A6_HEADERS = (
    "COMPANY CONTEXT (business only):",
    "PAIR QUALITY MEMORY (spread mean-reversion only):",
    "Learned Decision Principles (transferable; from training reflection):",
)


def test_the_headers_and_keys_the_paper_fixes_are_exact() -> None:
    from agent.pairs.moira.config import PromptConfig
    from agent.pairs.moira.memory import CounterfactualRecord
    from agent.pairs.moira.payloads import reflection_payload
    from agent.prompting import load_prompt

    system, _ = load_prompt("pairs_direction").render(
        company_lines=["AAA -- Alpha: makes a"],
        memory_lines=["AAA/BBB: good (reverted)"],
        principles=["When the z-score is stretched, trade toward the mean."],
        memory_last=False,
        payload="{}",
    )
    at = [system.index(h) for h in A6_HEADERS]
    assert at == sorted(at)  # A.6's order: company context, pair-quality memory, principles
    assert "- AAA -- Alpha: makes a" in system and "- AAA/BBB: good (reverted)" in system
    select, _ = load_prompt("pairs_select").render(
        company_lines=["AAA -- Alpha"], memory_lines=["AAA/BBB: good (x)"], payload="{}"
    )
    assert A6_HEADERS[0] in select and A6_HEADERS[1] in select
    for name in PROMPTS:
        text = load_prompt(name).system
        assert "from model pretraining" in text and "what you learned in training" not in text, name
    assert "(no memory)" in load_prompt("pairs_break").system
    rec = CounterfactualRecord(1, "AAA/BBB", "FLAT", 0.01, -0.01, "LONG_SHORT", False, 0.5, 0.0, "x")
    keys = set(reflection_payload("step 002", [rec], PromptConfig(), lambda k: f"step {k:03d}"))
    assert keys == {"current_step", "decisions", "win_rate", "avg_pnl", "counterfactual_summary"}
