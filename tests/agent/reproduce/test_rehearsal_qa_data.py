"""The data a FinAcumen rehearsal reads: each config's own benchmarks in their released layouts
(released files where the data root holds them, their records re-filed for parts it lacks,
stand-ins written in the layout otherwise), through the real loaders and scorers; and the
stage checks that fail a dataset whose stage was not exercised. No engine here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from agent.qa.evaluation.bank_build import check_scorers
from agent.reproduce.qa_run import _load
from agent.reproduce.rehearse.qa_data import rehearsal_data
from agent.reproduce.rehearse.qa_rehearsal import rehearsal_qa_plan, stage_checks
from agent.reproduce.rehearse.runs import SMALLEST
from agent.reproduce.spec import load_repro


def _all_sources(plan):
    return [*plan.bank, *plan.sets]


def test_with_no_data_root_every_benchmark_is_a_stand_in_its_loader_reads_and_its_scorer_grades(tmp_path):
    plan = load_repro("finacumen_table1").qa
    data = rehearsal_data(plan, None, tmp_path, items=2)
    assert {f.kind for f in data.files.values()} == {"stand-in"}
    items = []
    for s in _all_sources(plan):
        got, rec = _load(replace(s, limit=2), data.root, 42)  # the plan's default seed
        assert len(got) == 2 and rec["skipped"] == 0, (s.label, rec)
        items += got
    # the released layouts: file names as the authors publish them
    b = data.root / "benchmarks"
    assert (b / "bizbench" / "data" / "test-00000-of-00001-7b139510152259c8.parquet").is_file()
    assert (b / "finmme" / "data" / "train-00000-of-00001.parquet").is_file()
    assert (b / "fintmmbench" / "QA.json").is_file()
    assert {p.name for p in (b / "fintmmbench" / "data").iterdir()} == {
        "StockPrice.json", "FinancialTable.json", "News.json", "Chart",
    }  # fmt: skip
    assert (b / "finmmr" / "data" / "test" / "hard_test.json").is_file()
    # every source's gold scores correct under its own rule (FinTMMBench: a judge is named)
    labels = check_scorers(items, None, "judge-m")
    assert labels["fintmmbench"] == "judge judge-m" and labels["bizbench/SEC-NUM"].startswith("BizBench")
    finmme = [it for it in items if it.question.dataset == "finmme"]
    assert finmme and all(it.question.images for it in finmme)  # inline image bytes, cached as files


def test_the_stand_ins_hold_what_the_released_files_hold(tmp_path):
    """FinTMMBench: News rows whose Symbol is a list, lowercase row uuids, question records with
    uuid, type and chart sources, a repeated uuid; FinMME: ids and a choice item with empty
    options. The loaders and the retrieve tool read them as they read the real files."""
    import json

    from agent.qa.data.datasets import load_items
    from agent.qa.tools.corpus import Corpus, RetrieveTool

    plan = load_repro("finacumen_table1").qa
    data = rehearsal_data(plan, None, tmp_path, items=2)
    b = data.root / "benchmarks"
    news = json.loads((b / "fintmmbench" / "data" / "News.json").read_text())
    assert all(isinstance(r["Symbol"], list) and "uuid" in r for r in news)
    assert any(len(r["Symbol"]) == 2 for r in news)
    qa = json.loads((b / "fintmmbench" / "QA.json").read_text())
    assert {"Chart", "News", "StockPrice", "FinancialTable"} <= {r["type"] for r in qa}
    assert qa[-1]["uuid"] == qa[0]["uuid"]
    loaded = load_items("fintmmbench", b / "fintmmbench")
    assert len(loaded.items) == len(qa) and loaded.renamed == ((qa[0]["uuid"], f"{qa[0]['uuid']}#2"),)
    charts = [it for it in loaded.items if it.gold.extra["type"] == "Chart"]
    assert charts and all(len(it.gold.extra["evidence_images"]) == 1 for it in charts)
    two = next(r for r in news if len(r["Symbol"]) == 2)
    hit = RetrieveTool(Corpus.load(b / "fintmmbench"))({"query": "shares", "symbol": two["Symbol"][1]})
    assert f"(uuid {two['uuid']})" in hit.text
    finmme = load_items("finmme", b / "finmme", image_cache=tmp_path / "cache")
    assert finmme.skipped == () and all(it.item_id.startswith("finmme-10") for it in finmme.items)
    assert any(it.gold.answer_type == "choice" and not it.question.options for it in finmme.items)


def test_released_files_are_read_as_released_and_missing_parts_re_filed_without_overlap(
    tmp_path, shared_data
):
    rel = shared_data / "qa" / "released"
    if not (rel / "finmmr").is_dir():
        pytest.skip(f"{rel} absent")
    root = tmp_path / "root"
    (root / "benchmarks").mkdir(parents=True)
    for name in ("finmmr", "tatqa"):
        (root / "benchmarks" / name).symlink_to(rel / name)
    plan = load_repro("finacumen_table1").qa
    data = rehearsal_data(plan, root, tmp_path, items=3)
    kinds = {label: f.kind for label, f in data.files.items()}
    assert kinds["FinMMR Easy validation"] == "released"
    assert data.files["FinMMR Easy validation"].file.endswith("finmmr/data/validation/easy_validation.json")
    assert kinds["FinMMR Easy"] == kinds["FinMMR Hard validation"] == "released, re-filed"
    assert kinds["BizBench SEC-NUM"] == kinds["FinTMMBench"] == kinds["FinMME Avg"] == "stand-in"
    ids: dict[str, list[str]] = {}
    for s in _all_sources(plan):
        if s.dataset == "finmmr":
            got, _ = _load(replace(s, limit=3), data.root, 42)
            ids[s.label] = [it.item_id for it in got]
    assert ids["FinMMR Easy validation"] == ["easy-validation-0", "easy-validation-1", "easy-validation-2"]
    flat = [i for v in ids.values() for i in v]
    assert len(flat) == len(set(flat)) == 18  # six parts, no record used twice
    originals = [i.split("-standin-")[0] for i in flat]
    assert len(set(originals)) == 18  # and no released record re-filed twice


def test_the_rehearsal_plan_keeps_the_configs_protocol_and_shrinks_items(tmp_path):
    cfg = load_repro("finacumen_fig2_accumulation")
    plan, data = rehearsal_qa_plan(cfg, tmp_path, SMALLEST, None)
    assert plan.model == cfg.qa.model and plan.judge == "qwen3-4b-nothink" and plan.base == "model_only"
    assert (plan.thought_chars, plan.observation_chars, plan.gate_rejections) == (1000, 8000, 16)
    assert plan.bank_sizes == (0, 2, 4) and plan.max_steps == 1 and plan.bank_k == 1
    assert all(s.limit == 1 and s.path.startswith(str(data.root)) for s in (*plan.bank, *plan.sets))
    assert plan.store and Path(plan.store).is_file()  # a small market store for the lookup tool


def test_a_dataset_whose_stage_was_not_exercised_fails_and_so_does_a_stopped_run(tmp_path):
    plan, _ = rehearsal_qa_plan(load_repro("finacumen_table1"), tmp_path, SMALLEST, None)
    good_set = {"dataset": "FinTMMBench", "role": "set", "benchmark": "fintmmbench", "loaded": 1}
    good_set |= {"scored_base": 1, "scored_ft_fm": 1, "judged": 2, "judge_checked": 2, "report_rows": 2}
    good_bank = {"dataset": "FinMME train part", "role": "bank", "benchmark": "finmme", "loaded": 1,
                 "trajectories_scored": 1, "entries": 1}  # fmt: skip
    checks = stage_checks("engine", {"plan": plan, "stages": [good_set, good_bank], "error": ""})
    assert [c.ok for c in checks] == [True, True]
    no_judge = dict(good_set, judge_checked=0)
    no_entry = dict(good_bank, entries=0)
    checks = stage_checks("engine", {"plan": plan, "stages": [no_judge, no_entry], "error": "ConfigError: x"})
    assert [c.ok for c in checks] == [False, False, False]
    assert checks[0].detail == "the run stopped: ConfigError: x"
    assert checks[1].detail == "not exercised: judge check (nothing checked)"
    assert checks[2].detail == "not exercised: bank entries (none added)"


def test_a_bank_the_authors_rule_emptied_is_said_neither_passed_nor_failed(tmp_path):
    import dataclasses

    plan, _ = rehearsal_qa_plan(load_repro("finacumen_table1"), tmp_path, SMALLEST, None)
    bank = {"dataset": "FinMME train part", "role": "bank", "benchmark": "finmme", "loaded": 1,
            "bank_items": 2, "trajectories_scored": 2, "entries": 0, "no_terminated": 2}  # fmt: skip
    # under our grading an empty bank is a stage not exercised, whatever terminated
    [c] = stage_checks("engine", {"plan": plan, "stages": [bank], "error": ""})
    assert c.ok is False and c.detail == "not exercised: bank entries (none added)"
    theirs = dataclasses.replace(plan, bank_grading="authors")
    [c] = stage_checks("engine", {"plan": theirs, "stages": [bank], "error": ""})
    assert c.ok is None and "the authors' rule dropped every item" in c.detail
    # one item with a terminated trajectory and still no entry: a failure under their rule too
    [c] = stage_checks("engine", {"plan": theirs, "stages": [dict(bank, no_terminated=1)], "error": ""})
    assert c.ok is False and c.detail == "not exercised: bank entries (none added)"


class _NoCalls:
    name = "no-calls"

    def chat(self, requests):
        raise AssertionError(f"a model call was made: {requests[0].call_type}")

    def close(self) -> None:
        return None


def test_a_broken_scorer_for_one_source_fails_the_rehearsal_before_any_model_call(tmp_path, monkeypatch):
    from agent.qa.scoring.scorers import SCORERS
    from agent.reproduce.rehearse.qa_rehearsal import run_qa_rehearsal
    from serving.registry import default_registry

    def broken(gold, prediction, scale=None):
        raise KeyError("the BizBench rule is missing")

    cfg = load_repro("finacumen_table1")
    chosen = cfg.qa.scorer_of("bizbench")  # the config's own choice: the authors' rule
    monkeypatch.setitem(SCORERS["bizbench"], chosen.name, replace(chosen, rule=broken))
    ran = run_qa_rehearsal(cfg, tmp_path, _NoCalls(), default_registry(), size=SMALLEST, data_root=None)
    assert "source 'bizbench/SEC-NUM'" in ran["error"] and "the BizBench rule is missing" in ran["error"]
    checks = stage_checks("engine", ran)
    assert not any(c.ok for c in checks) and len(checks) == 13  # the stopped run and all 12 datasets
    assert checks[0].detail.startswith("the run stopped: ConfigError: source 'bizbench/SEC-NUM'")
    assert not (tmp_path / "journal.sqlite").exists() and not (tmp_path / "reproduction.md").exists()
