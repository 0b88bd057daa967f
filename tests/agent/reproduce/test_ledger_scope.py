"""Provenance is resolved per key and per use (the config, the cell, the array element, beside
another setting's value), never by the value alone; and the settings the ledger once mislabelled
print as what they are."""

from __future__ import annotations

import dataclasses
import json

from agent.reproduce.ledger.book import Ledger, LedgerValue, load_ledger, parse_ledger
from agent.reproduce.ledger.effective import Setting, effective_settings
from agent.reproduce.ledger.render import _cell, render_protocol
from agent.reproduce.ledger.resolve import UNLISTED, resolve, resolve_config
from agent.reproduce.spec import load_repro


def _rows(resolved, key: str) -> list[tuple[object, str, str]]:
    return [(r.setting.value, r.setting.scope, r.provenance) for r in resolved if r.key == key]


def _with_entry(ledger: Ledger, raw: dict) -> Ledger:
    entry = parse_ledger({"setting": [raw]}, ledger.paper).entries[0]
    return Ledger(ledger.paper, tuple(entry if e.key == entry.key else e for e in ledger.entries))


_FINMEM_THINKING = {
    "key": "baselines.finmem.thinking",
    "stage": "baselines",
    "title": "FinMem thinking switch",
    "paper": "§4.1",
    "values": [
        {"unset": True, "provenance": "ours", "why": "Llama"},
        {"value": False, "provenance": "ours", "why": "no-think"},
        {
            "value": True,
            "provenance": "paper",
            "section": "§4.3.1",
            "quote": "GPT-5.4-mini with No-Beta exposure (G54-N)",
            "where": {"config": ["moira_table6_a3"]},
        },
        {"value": True, "provenance": "ours", "why": "follows the cell's backbone"},
    ],
}


def test_a_value_row_of_one_config_does_not_spread_to_every_cell_with_that_value() -> None:
    """The old lookup by value printed the FinMem thinking row as the paper's in every thinking
    cell; a row scoped to one config speaks for that config only."""
    ledger = _with_entry(load_ledger("moira"), _FINMEM_THINKING)
    main = load_repro("moira_table3_main")
    a3 = load_repro("moira_table6_a3")
    got = _rows(resolve(effective_settings(main), ledger, main.name), "baselines.finmem.thinking")
    assert (True, "q4-think/main; q32-think/main", "ours") in got
    assert all(p != "paper" for _, _, p in got)
    got = _rows(resolve(effective_settings(a3), ledger, a3.name), "baselines.finmem.thinking")
    assert (True, "q32-think/main", "paper") in got
    # the same ledger without the scope is the old behaviour: the value alone decides
    unscoped = dict(
        _FINMEM_THINKING,
        values=[{k: v for k, v in r.items() if k != "where"} for r in _FINMEM_THINKING["values"]],
    )
    old = _rows(
        resolve(effective_settings(main), _with_entry(ledger, unscoped), main.name),
        "baselines.finmem.thinking",
    )
    assert (True, "q4-think/main; q32-think/main", "paper") in old


def test_one_setting_whose_uses_resolve_differently_is_split_by_scope() -> None:
    ledger = load_ledger("moira")
    s = Setting(
        "model.thinking",
        True,
        "",
        (("q4/main", ""), ("l8/main", "")),
    )
    backbones = [
        Setting("model.backbone", "qwen3-4b", "q4/main", (("q4/main", ""),)),
        Setting("model.backbone", "llama-3.1-8b", "l8/main", (("l8/main", ""),)),
    ]
    got = _rows(resolve([s, *backbones], ledger, "mine"), "model.thinking")
    assert got == [(True, "q4/main", "paper"), (True, "l8/main", UNLISTED)]


def test_rows_scoped_by_another_key_or_an_element_name() -> None:
    """Real rows of the Moira ledger: the thinking switch is the paper's on a Qwen backbone only,
    A3's control (consolidation off) in A3's control variant only, both exposures in the main
    windows only."""
    ledger = load_ledger("moira")
    a3 = load_repro("moira_table6_a3")
    settings = effective_settings(a3)
    got = _rows(resolve(settings, ledger, a3.name), "variants[].policy.consolidation")
    assert (
        False,
        "q32-think/main, variant a3-no-consolidation; q32-nothink/main, variant a3-no-consolidation",
        "paper",
    ) in got
    # consolidation off in the full agent's variant is not the paper's
    flipped = [
        dataclasses.replace(s, value=False)
        if s.key == "variants[].policy.consolidation" and s.value is True
        else s
        for s in settings
    ]
    got = _rows(resolve(flipped, ledger, a3.name), "variants[].policy.consolidation")
    assert [p for v, sc, p in got if "variant full" in sc] == [UNLISTED]
    a1 = load_repro("moira_table4_a1")
    main = load_repro("moira_table3_main")
    assert _rows(resolve_config(main), "experiment.exposures") == [(["no_beta", "beta"], "", "paper")]
    assert _rows(resolve_config(a1), "experiment.exposures") == [(["no_beta", "beta"], "", "ours")]


def test_a_scoped_row_needs_its_scope_to_apply() -> None:
    row = LedgerValue("ours", 3, why="w", where=(("config", ("a",)),))
    assert not row.applies(None)
    e = parse_ledger({"setting": [dict(_FINMEM_THINKING)]}, "moira").entries[0]
    assert e.value_for(True).provenance == "ours"  # without a use, the scoped paper row is skipped


def test_the_mislabels_are_gone(cli) -> None:
    """What the ledger once labelled the paper's without the paper stating it."""
    got: dict[str, set[str]] = {}
    for name in ("moira_table3_main", "finacumen_table1", "finacumen_table1_authors"):
        res = cli("reproduce", "settings", name, "--json")
        assert res.code == 0, res.err
        for s in json.loads(res.out)["settings"]:
            got.setdefault(s["key"], set()).add(s["provenance"])
            if s["provenance"] == "paper":
                assert s["locator"]["section"] and s["locator"]["quote"], s
            if s["provenance"] == "authors":
                assert s["locator"]["at"] and s["locator"]["token"], s
    for key in (
        "variants[].policy.direction_rule",
        "screen.max_pvalue",
        "screen.half_life_min",
        "screen.half_life_max",
        "prompt.description_max_chars",
        "prompt.reason_max_chars",
        "baselines.finmem.thinking",
        "baselines.finmem.reason_max_chars",
        "baselines.finmem.reflection_max_chars",
        "baselines.finmem.train_exposure",
        "backbone.repetition_penalty",
        "solver.sampling.repetition_penalty",
        "qa.tools",
    ):
        assert "paper" not in got[key], key
    assert got["qa.bank_temperature"] == {"authors"}
    fin = load_ledger("finacumen")
    sweep = next(v for v in fin.entry_for("qa.k_max").values if v.value == [1, 3, 5, 7])
    assert sweep.section == "§5.5"
    assert "§5.4" not in fin.entry_for("qa.taus").paper
    for key in ("qa.max_tokens", "qa.base_max_tokens", "solver.max_tokens"):
        assert "max_tokens = 1024" in fin.entry_for(key).authors
    assert "native function calls" in fin.entry_for("qa.action_schema").authors


def test_the_protocol_pages_show_the_locators() -> None:
    for paper in ("moira", "finacumen"):
        page = render_protocol(paper)
        for e in load_ledger(paper).entries:
            for v in e.values:
                if v.provenance == "paper":
                    assert _cell(f"{v.section}: “{v.quote}”") in page, (e.key, v.quote)
                if v.provenance == "authors":
                    assert f"[`{v.at}`](https://github.com/" in page, (e.key, v.at)
    page = render_protocol("finacumen")
    assert "blob/16246593c75e81fac0b57c05e739761dae3e6fe9/finacumen/fm/cross_verify.py#L38-L59" in page
    assert "[only config in finacumen_kmax_sweep]" in page
