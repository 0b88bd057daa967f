"""The ledger rows of the authors' protocol points: every key of the plan's "authors' code"
section has an entry; every ``authors`` row that names a place in their code (``at``) holds its
tokens there at the pinned snapshot, and every ``paper`` row with a ``quote`` quotes the paper.
The shipped authors' configs take the authors' value of each point."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agent.reproduce.ledger.book import load_ledger
from agent.reproduce.qa_authors import _CHOICES
from agent.reproduce.spec import load_repro

ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT = ROOT.parent / "shared" / "vendor" / "FinAcumen-16246593c75e81fac0b57c05e739761dae3e6fe9"
PAPER = ROOT.parent / "shared" / "seeds" / "finacumen.md"

#: the points of the authors' protocol (and the keys the authors' group sets with them)
POINT_KEYS = [k for k, _ in _CHOICES] + [
    "authors_code",
    "authors_code_verify",
    "grading_temperature",
    "grading_max_tokens",
    "judge_max_tokens",
    "tau_hit_rate",
    "base",
    "base_max_tokens",
    "max_tokens",
    "max_images",
    "memory_block",
]


def _rows():
    for e in load_ledger("finacumen").entries:
        for v in e.values:
            yield e, v


def test_every_point_has_a_ledger_entry() -> None:
    ledger = load_ledger("finacumen")
    assert [k for k in POINT_KEYS if ledger.entry_for(f"qa.{k}") is None] == []


def test_every_located_authors_row_holds_its_tokens_at_the_pinned_snapshot() -> None:
    if not SNAPSHOT.is_dir():
        pytest.skip(f"{SNAPSHOT} absent")
    located = [(e, v) for e, v in _rows() if v.at]
    assert len(located) >= 20
    for e, v in located:
        assert v.provenance == "authors", e.key
        m = re.fullmatch(r"FinAcumen/(.+):(\d+)(?:-(\d+))?", v.at)
        assert m, v.at
        lines = (SNAPSHOT / m.group(1)).read_text(encoding="utf-8").splitlines()
        lo, hi = int(m.group(2)), int(m.group(3) or m.group(2))
        span = "\n".join(lines[lo - 1 : hi])
        for token in [v.token] if isinstance(v.token, str) else v.token:
            assert token and token in span, f"{e.key}: {token!r} not at {v.at}"


def test_every_quoted_paper_row_quotes_the_paper() -> None:
    if not PAPER.is_file():
        pytest.skip(f"{PAPER} absent")
    text = " ".join(PAPER.read_text(encoding="utf-8").split())
    quoted = [(e, v) for e, v in _rows() if v.quote]
    assert quoted
    for e, v in quoted:
        assert v.section and " ".join(v.quote.split()) in text, e.key


@pytest.mark.parametrize("name", ["finacumen_table1_authors", "finacumen_leak_ablation"])
def test_the_authors_configs_take_the_authors_value_of_each_point(name: str) -> None:
    from agent.reproduce.ledger.effective import effective_settings

    cfg = load_repro(name)
    ledger = load_ledger("finacumen")
    settings = effective_settings(cfg)
    for s in settings:
        key = s.key.removeprefix("qa.")
        if key not in POINT_KEYS or key in ("authors_code", "authors_code_verify") or "arm paper" in s.scope:
            continue
        row = ledger.entry_for(s.key).value_for(s.value)
        wanted = "ours" if key in ("tau_calibration",) else "authors"
        assert row is not None and row.provenance in (wanted, "paper"), (s.key, s.value, s.scope)
        if key in (
            "loop",
            "base",
            "base_reading",
            "answer_reading",
            "bank_grading",
            "summary_prompt",
            "judge_protocol",
            "memory_block",
            "entry_context",
            "finmme_context",
            "corpus_lookup",
        ):
            assert s.value == (
                "whole"
                if key == "entry_context"
                else "caption"
                if key == "finmme_context"
                else "exact"
                if key == "corpus_lookup"
                else "authors"
            ), s.key
