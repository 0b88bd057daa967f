"""Named beside anonymized: a folder holding an experiment with real names in its prompts and one
with aliases (``extra.anonymized``) gets, per section, a row pair per setting (named, then
anonymized) with the median-return runs' figures and their difference; the results table keeps
the two settings apart; a folder without an anonymized run has no such table."""

from __future__ import annotations

from pathlib import Path

from report_support import LS, MOIRA_ACTIONS, PAIR, moira_extra, pair_steps, write_run
from test_report_page import cells, parse

from agent.report.build import build_report


def _moira(root: Path, anonymized: bool, shift: int) -> None:
    for seed, acts in MOIRA_ACTIONS.items():
        acts = acts[shift:] + acts[:shift]
        write_run(
            root,
            f"full-no_beta-s{seed}",
            pair_steps(LS, acts, PAIR),
            kind="moira",
            method="moira",
            seed=seed,
            extra=moira_extra(6, accepted=1) | {"anonymized": anonymized, "backbone": "m"},
        )


def test_named_and_anonymized_runs_are_a_row_pair(tmp_path: Path) -> None:
    _moira(tmp_path / "named", False, 0)
    _moira(tmp_path / "anon", True, 2)
    page = parse(build_report(tmp_path).html)
    results = [a["data-setting"] for a, _ in page.tables["results"]]
    assert results == ["Moira · m", "Moira · m · anonymized"]
    rows = page.tables["results memorization"]
    assert [(a["data-setting"], a["data-prompts"]) for a, _ in rows] == [
        ("Moira · m", "named"),
        ("Moira · m", "anonymized"),
    ]
    by = {a["data-setting"]: cells((a, r)) for a, r in page.tables["results"]}
    pair = [cells(r) for r in rows]
    assert pair[0]["cumulative_return"][0] == by["Moira · m"]["cumulative_return"][0]
    assert pair[1]["cumulative_return"][0] == by["Moira · m · anonymized"]["cumulative_return"][0]
    assert pair[0]["cumulative_return"][0] != pair[1]["cumulative_return"][0]
    assert "Named minus anonymized" in build_report(tmp_path).html.read_text()


def test_no_pair_without_an_anonymized_run(tmp_path: Path) -> None:
    _moira(tmp_path / "named", False, 0)
    page = parse(build_report(tmp_path).html)
    assert "results memorization" not in page.tables
