"""The ledger rows of the authors' protocol points: every key of the plan's "authors' code"
section has an entry, and the shipped authors' configs take the authors' value of each point.
(Every row's locator, theirs included, is checked against the paper and the pinned snapshots by
test_ledger_locators.py.)"""

from __future__ import annotations

import pytest

from agent.reproduce.ledger.book import load_ledger
from agent.reproduce.qa_authors import _CHOICES
from agent.reproduce.spec import load_repro

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


def test_every_point_has_a_ledger_entry() -> None:
    ledger = load_ledger("finacumen")
    assert [k for k in POINT_KEYS if ledger.entry_for(f"qa.{k}") is None] == []


@pytest.mark.parametrize("name", ["finacumen_table1_authors", "finacumen_leak_ablation"])
def test_the_authors_configs_take_the_authors_value_of_each_point(name: str) -> None:
    from agent.reproduce.ledger.resolve import resolve_config

    for r in resolve_config(load_repro(name)):
        s = r.setting
        key = s.key.removeprefix("qa.")
        if key not in POINT_KEYS or key in ("authors_code", "authors_code_verify") or "arm paper" in s.scope:
            continue
        wanted = "ours" if key in ("tau_calibration",) else "authors"
        assert r.row is not None and r.provenance in (wanted, "paper"), (s.key, s.value, s.scope)
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
