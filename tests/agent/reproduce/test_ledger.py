"""The protocol ledger: every effective setting of every shipped reproduction config, and every
code default, is declared with its provenance; the defaults follow the paper where it states a
value (or say why not); the generated "What differs" section and `reproduce settings` read it."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from agent.reproduce.ledger.book import STAGES, Ledger, LedgerEntry, LedgerValue, load_ledger, parse_ledger
from agent.reproduce.ledger.effective import GIVEN, default_settings, effective_settings
from agent.reproduce.ledger.render import render_protocol
from agent.reproduce.ledger.resolve import (
    UNLISTED,
    differs_section,
    problems,
    provenance_counts,
    resolve,
    resolve_config,
)
from agent.reproduce.spec import load_all, load_repro
from localfin.errors import ConfigError

CONFIGS = load_all()
KIND = {"moira": "moira", "finacumen": "qa"}


@pytest.mark.parametrize("cfg", CONFIGS, ids=[c.name for c in CONFIGS])
def test_every_effective_setting_of_a_shipped_config_is_declared(cfg) -> None:
    assert problems(resolve_config(cfg)) == []


@pytest.mark.parametrize("paper", list(KIND))
def test_every_code_default_is_declared(paper: str) -> None:
    assert problems(resolve(default_settings(KIND[paper]), load_ledger(paper))) == []


@pytest.mark.parametrize("paper", list(KIND))
def test_the_defaults_follow_the_paper_or_say_why_not(paper: str) -> None:
    ledger = load_ledger(paper)
    defaults = {s.key: s for s in default_settings(KIND[paper]) if not s.key.startswith(GIVEN)}
    wrong, stale = [], []
    for e in ledger.entries:
        hits = [s for k, s in defaults.items() if e.matches(k)]
        pv = e.paper_values()
        if not hits or not pv:
            continue
        on_paper = all(any(v.matches(s.value) for v in pv) for s in hits)
        if not on_paper and not e.default_differs:
            wrong.append(f"{e.key}: default {[s.value for s in hits]}, paper {[v.label() for v in pv]}")
        if on_paper and e.default_differs:
            stale.append(e.key)
    assert wrong == [], "a default differs from the paper's stated value without default_differs"
    assert stale == [], "default_differs on a default that is the paper's"


@pytest.mark.parametrize("paper", list(KIND))
def test_no_entry_is_stale(paper: str) -> None:
    keys = {s.key for c in CONFIGS if c.paper == paper for s in effective_settings(c)}
    keys |= {s.key for s in default_settings(KIND[paper])}
    assert [e.key for e in load_ledger(paper).entries if not any(e.matches(k) for k in keys)] == []


def test_a_key_without_an_entry_and_a_changed_constant_are_both_caught() -> None:
    cfg = load_repro("moira_table3_main")
    ledger = load_ledger("moira")
    without = Ledger("moira", tuple(e for e in ledger.entries if e.key != "variants[].policy.max_cycles"))
    assert [p.split(" = ")[0] for p in problems(resolve(effective_settings(cfg), without))] == [
        "variants[].policy.max_cycles"
    ]
    # the constant changed in code (or a config) but not in its entry
    changed = [
        dataclasses.replace(s, value=9) if s.key == "variants[].policy.max_cycles" else s
        for s in effective_settings(cfg)
    ]
    found = problems(resolve(changed, ledger))
    assert len(found) == 1 and found[0].startswith("variants[].policy.max_cycles = 9")
    assert "does not list" in found[0]


def test_a_new_config_field_without_an_entry_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field added to a config dataclass appears among the effective settings at once."""
    from agent.reproduce.ledger import effective

    real = effective.flatten

    def with_new_field(table, prefix=""):
        rows = real(table, prefix)
        if prefix == "" and "screen" in table:
            rows.append(("screen.brand_new_threshold", 0.7, ""))
        return rows

    monkeypatch.setattr(effective, "flatten", with_new_field)
    found = problems(resolve_config(load_repro("moira_table3_main")))
    assert [p.split(" = ")[0] for p in found] == ["screen.brand_new_threshold"]
    assert "no ledger entry" in found[0]


def test_the_no_beta_default_is_the_papers_equal_shares() -> None:
    from agent.pairs.experiment.config import parse_config

    cfg = parse_config(
        {
            "experiment": {"name": "x", "store": "s.sqlite"},
            "windows": {
                "train_start": "2025-01-02",
                "train_end": "2025-02-11",
                "test_start": "2025-02-12",
                "test_end": "2025-05-30",
            },
        }
    )
    assert cfg.no_beta_legs == "equal_shares"


def test_scoped_values_name_the_cells_that_use_them() -> None:
    rows = {
        (s.key, json.dumps(s.value)): s.scope for s in effective_settings(load_repro("moira_table3_main"))
    }
    assert rows[("model.thinking", "true")] == "q4-think/main; q32-think/main"
    assert rows[("experiment.no_beta_legs", '"equal_shares"')] == ""


def test_the_differs_section_lists_every_value_that_is_not_the_papers() -> None:
    cfg = load_repro("moira_table3_main")
    rows = resolve_config(cfg)
    text = "\n".join(differs_section(cfg, rows))
    assert text.startswith("What differs from the paper")
    not_paper = [r for r in rows if r.provenance not in ("paper", "operational")]
    assert not_paper and all(f"`{r.key}` = {r.value_text()}" in text for r in not_paper)
    for r in rows:
        if r.provenance in ("paper", "operational"):
            assert f"`{r.key}` = {r.value_text()}" not in text
    assert all(f"- {d}" in text for d in cfg.differs)
    assert "`variants[].policy.stop_after_rejections` = 2" in text  # an unstated patience is ours


def test_the_ledger_refuses_malformed_entries() -> None:
    row = {"key": "screen.top_k", "stage": "screen", "title": "t", "paper": "A.6", "values": []}
    paper = {"value": 5, "provenance": "paper", "section": "App. A.6", "quote": "top5 candidates here"}
    authors = {
        "value": 3,
        "provenance": "authors",
        "at": "FinMem/config/tsla_gpt_config.toml:12",
        "token": "top_k",
    }
    cases = [
        ({**row, "values": [{"value": 5, "provenance": "guess"}]}, "provenance='guess'"),
        ({**row, "values": [{"value": 5, "provenance": "ours"}]}, "needs a why"),
        ({**row, "values": [{**paper, "unset": True}]}, "exactly one of"),
        ({**row, "stage": "nowhere", "values": [paper]}, "stage='nowhere'"),
        ({**row, "values": []}, "list its values"),
        ({**row, "paper": "", "values": [paper]}, "needs the paper's point"),
        # the locator format: each failure names the row and the bad field
        (
            {**row, "values": [{"value": 5, "provenance": "paper"}]},
            "values[0]: 'screen.top_k': ledger value 5: section=''",
        ),
        ({**row, "values": [{**paper, "section": "A.6"}]}, "section='A.6'; a paper value needs the section"),
        (
            {**row, "values": [{**paper, "quote": ""}]},
            "quote=''; a paper value needs a quote of 2 to 25 words",
        ),
        ({**row, "values": [{**paper, "quote": "top5"}]}, "quote='top5'"),
        ({**row, "values": [{**paper, "stated": 5}]}, "stated=5 needs a why"),
        (
            {**row, "values": [{**paper, "at": "FinMem/a.py:1"}]},
            "at is a locator of authors rows, not of paper rows; allowed here: section, quote, stated",
        ),
        (
            {**row, "values": [{"value": 5, "provenance": "ours", "why": "w", "quote": "two words"}]},
            "quote is a locator of paper rows, not of ours rows; allowed here: why",
        ),
        (
            {**row, "authors": "a", "values": [{**authors, "at": ""}]},
            "an authors value needs its file and line: at=''",
        ),
        (
            {**row, "authors": "a", "values": [{**authors, "at": "finmem/a.py:3"}]},
            "repository 'finmem'; allowed: FinAcumen, FinMem",
        ),
        (
            {**row, "authors": "a", "values": [{**authors, "at": "FinMem/a.py:9-3"}]},
            "lines 9-3; allowed: 1 <= first <= last",
        ),
        ({**row, "authors": "a", "values": [{**authors, "at": "FinMem/a.py:1-200"}]}, "at most 60 lines"),
        (
            {**row, "authors": "a", "values": [{**authors, "token": []}]},
            "token=[]; an authors value needs a token",
        ),
        (
            {**row, "authors": "a", "values": [{**authors, "token": 3}]},
            "token=3; allowed: a string or a list of strings",
        ),
        (
            {**row, "values": [{**paper, "where": {"Bad Key": ["x"]}}]},
            "where key 'Bad Key'; allowed: config, cell",
        ),
        ({**row, "values": [{**paper, "where": {"config": []}}]}, "where config lists no value"),
    ]
    for bad, words in cases:
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_ledger({"setting": [bad]}, "moira")
    with pytest.raises(ConfigError, match="listed twice"):
        parse_ledger({"setting": [{**row, "values": [paper]}, {**row, "values": [paper]}]}, "moira")
    ok = parse_ledger({"setting": [{**row, "authors": "a", "values": [paper, authors]}]}, "moira")
    assert ok.entries[0].values[1].token == ("top_k",)


def test_patterns_and_values_match_as_documented() -> None:
    e = LedgerEntry(
        "baselines.*.z_window",
        "baselines",
        "z",
        values=(LedgerValue("ours", 20, why="w"), LedgerValue("ours", unset=True, why="u")),
    )
    assert e.matches("baselines.eg_z.z_window") and not e.matches("baselines.eg_z.x.z_window")
    assert e.value_for(20.0) is e.values[0] and e.value_for(None) is e.values[1] and e.value_for(21) is None
    exact = LedgerEntry(
        "baselines.eg_z.z_window", "baselines", "z", values=(LedgerValue("ours", 20, why="w"),)
    )
    led = Ledger("moira", (e, exact))
    assert led.entry_for("baselines.eg_z.z_window") is exact
    assert led.entry_for("baselines.finmem.z_window") is e


@pytest.mark.parametrize("paper", list(KIND))
def test_the_protocol_page_shows_every_entry_by_stage(paper: str) -> None:
    page = render_protocol(paper)
    ledger = load_ledger(paper)
    assert all(f"`{e.key}`" in page for e in ledger.entries)
    stages = [s for s in STAGES[paper] if any(e.stage == s and not e.operational for e in ledger.entries)]
    positions = [page.index(f"## {s.capitalize()}\n") for s in stages]
    assert positions == sorted(positions)


def test_reproduce_settings_json_counts_and_lists_every_setting(cli) -> None:
    res = cli("reproduce", "settings", "finacumen_table1", "--json")
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    cfg = load_repro("finacumen_table1")
    rows = resolve_config(cfg)
    assert doc["counts"] == provenance_counts(rows)
    assert len(doc["settings"]) == len(effective_settings(cfg))
    assert UNLISTED not in doc["counts"]
    assert {s["provenance"] for s in doc["settings"]} <= {"paper", "authors", "ours", "operational"}
    text = cli("reproduce", "settings", "moira_table3_main")
    assert text.code == 0 and "keys by provenance:" in text.out


def test_reproduce_settings_of_a_users_config_marks_its_own_values(cli, tmp_path) -> None:
    src = load_repro("moira_table6_a3").source.read_text(encoding="utf-8")
    mine = tmp_path / "mine.toml"
    mine.write_text(src.replace("max_cycles = 8", "max_cycles = 3"), encoding="utf-8")
    res = cli("reproduce", "settings", mine, "--json")
    assert res.code == 0, res.err
    rows = [s for s in json.loads(res.out)["settings"] if s["key"] == "variants[].policy.max_cycles"]
    assert rows and all(r["provenance"] == UNLISTED and r["value"] == 3 for r in rows)
    bad = cli("reproduce", "settings", "no_such_config")
    assert bad.code == 2 and "unknown reproduction config" in bad.err


def test_check_prints_the_generated_differs_section(cli) -> None:
    res = cli("reproduce", "check", "moira_table6_a3")
    assert "moira_table6_a3: What differs from the paper" in res.out
    assert "`variants[].policy.stop_after_rejections` = 2" in res.out
    assert "Facts that are not settings:" in res.out
