"""The Moira rehearsal on a config's own data path, with the scripted model (the engine and server
paths are tests/agent/reproduce/test_rehearsal.py): the config's data in the Herculean layout
through the importer (a stand-in in that layout where the user has no files), the config's pool
and shrunk windows, highlights as news on every news path, every baseline of the config, the
matrix, the summaries and reproduction.md, each a stage check; a stage that did not run fails."""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
from pathlib import Path

import pandas as pd
import pytest

from agent.reproduce.rehearse.moira_rehearsal import (
    prepare_store,
    run_moira_rehearsal,
    stage_checks,
    user_files,
    write_stand_in,
)
from agent.reproduce.rehearse.runs import SMALLEST
from agent.reproduce.spec import load_repro
from serving.models.registry import default_registry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pairs"))
from moira_support import scripted, with_finmem

CONFIG = "moira_table5_a2"


@pytest.fixture(scope="module")
def rehearsed(tmp_path_factory: pytest.TempPathFactory):
    cfg = load_repro(CONFIG)
    root = tmp_path_factory.mktemp("moira_rehearsal")
    out = root / cfg.name / "engine"
    ran = run_moira_rehearsal(
        cfg, out, with_finmem(scripted()), default_registry(), size=SMALLEST, data_root=root / "no_user_data"
    )
    return cfg, out, ran


def test_every_stage_of_the_configs_path_ran(rehearsed) -> None:
    cfg, _out, ran = rehearsed
    checks = ran["checks"]
    assert checks and all(c.ok for c in checks), [c for c in checks if not c.ok]
    names = {c.name for c in checks}
    for call in (
        "pair_selection",
        "direction",
        "reflection",
        "break_check",
        "news_verify",
        "finmem_decision",
    ):
        assert f"calls: {call}" in names
    for stage in (
        "news in pair selection",
        "news in direction",
        "news in break check",
        "news in verification",
    ):
        assert stage in names
    baselines = {c.name.split(" (")[0] for c in checks if c.name.startswith("baseline:")}
    assert (
        baselines
        == {f"baseline: {m}" for m in cfg.baselines}
        == {
            f"baseline: {m}"
            for m in ("long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn", "finmem")
        }
    )
    assert {"matrix summary.md", "reproduction.md", "import (Herculean layout)"} <= names


def test_the_data_is_the_herculean_layout_through_the_importer(rehearsed) -> None:
    cfg, out, ran = rehearsed
    data = ran["data"]
    assert data.stand_in and data.rows["prices"] > 2520 * len(cfg.pool) and data.rows["news"] > 0
    base = data.herculean / "data"
    assert list(pd.read_parquet(base / "prices.parquet").columns) == [
        "id",
        "symbol",
        "date",
        "open",
        "high",
        "low",
        "close",
        "adj_close",
        "volume",
    ]
    assert list(pd.read_parquet(base / "news.parquet").columns) == ["id", "symbol", "date", "highlights"]
    assert {"document_type", "mda_content", "risk_content"} <= set(
        pd.read_parquet(base / "filings.parquet").columns
    )
    con = sqlite3.connect(data.store)
    kinds = dict(con.execute("SELECT kind, COUNT(*) FROM news GROUP BY kind").fetchall())
    tickers = {r[0] for r in con.execute("SELECT DISTINCT ticker FROM prices")}
    con.close()
    assert set(kinds) == {"highlights"} and tickers == set(cfg.pool)
    # the config's pool and its own windows, shrunk: the A2 windows' first sessions
    doc = ran["document"]
    assert doc["experiment"]["pool"] == list(cfg.pool) and doc["experiment"]["store"] == str(data.store)
    [w] = doc["windows"]
    assert (w["train_start"], w["test_start"]) == ("2025-06-02", "2025-07-14")
    # the report says which files it used
    text = (out / "reproduction.md").read_text(encoding="utf-8")
    assert "stand-in written in the Herculean layout" in text and str(base / "news.parquet") in text
    assert json.loads((out / "reproduction.json").read_text(encoding="utf-8"))["data"]["stand_in"] is True


def test_the_news_paths_carry_the_highlights(rehearsed) -> None:
    _, out, _ = rehearsed
    from serving.journal import Journal

    reqs = []
    for p in out.rglob("journal.sqlite"):
        with Journal(p) as j:
            reqs += [r["request"] for r in j.records()]
    verify = [json.loads(r["messages"][-1]["content"]) for r in reqs if r["call_type"] == "news_verify"]
    assert verify and all("daily highlights" in v["past_week_news_summary"] for v in verify)
    breaks = [json.loads(r["messages"][-1]["content"]) for r in reqs if r["call_type"] == "break_check"]
    assert any("restate" in b["past_week_news_summary"] for b in breaks)
    # paper-scale news: whole items under the budget, never a cut item
    assert not any(b["past_week_news_summary"].endswith("...") for b in breaks)


def test_a_stage_that_did_not_run_fails(rehearsed, tmp_path: Path) -> None:
    cfg, out, ran = rehearsed
    copy = tmp_path / "engine"
    shutil.copytree(out, copy)
    cell = sorted(p.parent.parent for p in (copy / "matrix").glob("*/*/runs/eg_z-no_beta"))[0]
    for d in (cell / "runs").glob("eg_z-*"):
        shutil.rmtree(d)
    journal = cell / "journal.sqlite"
    con = sqlite3.connect(journal)
    con.execute('DELETE FROM calls WHERE request_json LIKE \'%"call_type": "news_verify"%\'')
    con.commit()
    con.close()
    for other in (copy / "matrix").rglob("journal.sqlite"):
        if other != journal:
            c = sqlite3.connect(other)
            c.execute('DELETE FROM calls WHERE request_json LIKE \'%"call_type": "news_verify"%\'')
            c.commit()
            c.close()
    (copy / "reproduction.md").unlink()
    failed = {
        c.name for c in stage_checks(cfg, copy, ran["document"], ran["data"], "engine") if c.ok is False
    }
    assert {
        f"baseline: eg_z ({cell.parent.name}/{cell.name})",
        "calls: news_verify",
        "news in verification",
        "reproduction.md",
    } <= failed


def test_the_users_files_are_used_when_present(tmp_path: Path) -> None:
    cfg = load_repro(CONFIG)
    root = tmp_path / "localfin_data"
    assert user_files(root) is None
    # the user's folder as they would lay it out: herculean/, history/*.csv, companies.csv
    staged = tmp_path / "made"
    herculean, history, companies = write_stand_in(cfg, staged, history_sessions=300)
    shutil.copytree(herculean, root / "herculean")
    (root / "history").mkdir(parents=True)
    shutil.copy(history[0], root / "history" / "long.csv")
    shutil.copy(companies[0], root / "companies.csv")
    found = user_files(root)
    assert found is not None and found[0] == root / "herculean"
    files = prepare_store(cfg, tmp_path / "data", train=2, test=4, data_root=root)
    assert not files.stand_in and files.history == (root / "history" / "long.csv",)
    assert "the user's files" in files.describe()[0]
    # made once: the second path reuses it
    again = prepare_store(cfg, tmp_path / "data", train=2, test=4, data_root=tmp_path / "elsewhere")
    assert again == files


def test_a_config_that_reads_replies_as_the_paper_runs_on_short_free_replies(rehearsed) -> None:
    from agent.reproduce.rehearse.moira_rehearsal import FREE_REPLY_TOKENS

    cfg, out, ran = rehearsed
    assert cfg.document["model"]["decoding"] == "prompt"
    doc = ran["document"]
    assert set(doc["model"]["max_tokens"].values()) == {FREE_REPLY_TOKENS}
    assert doc["selection"]["fallback"] == "top_candidate"
    text = (out / "reproduction.md").read_text(encoding="utf-8")
    # the fallbacks per call type and the paper's token tables, as computed there
    assert "## Fallbacks per call type" in text and "| prompt | direction |" in text
    assert "## Table 9 as the paper computes it" in text and "## Table 10 as the paper computes it" in text
    assert "decoding prompt (the paper's)" in text


def test_the_a3_stage_shows_the_shared_warmup_and_fails_without_it(tmp_path: Path) -> None:
    from moira_support import small_config, small_store

    from agent.pairs.experiment.run import run_experiment
    from agent.reproduce.rehearse.moira_rehearsal import _a3_shared_warmup, _same_training

    variants = [{"name": "full"}, {"name": "a3-no-consolidation", "consolidation": False}]
    cfg, text = small_config(small_store(), windows={"test_end": "2015-02-06"}, variants=variants)
    out = tmp_path / "a3"
    run_experiment(cfg, out, config_text=text, backend=scripted())
    want = [rid for rid, *_ in cfg.run_ids()]
    ok, detail = _a3_shared_warmup(out, cfg, want, set(want))
    assert ok, detail
    assert "full-no_beta-s0 and a3-no-consolidation-no_beta-s0 share one warmup" in detail
    assert "first test request identical in both conditions: True" in detail
    # A3's two conditions share the warmup, not the whole training (the control replays nothing)
    assert _same_training(out, want) == (False, _same_training(out, want[:1])[1])
    # a control that ran its own warmup (its warmup rows other requests) fails the stage
    trace = out / "runs" / "a3-no-consolidation-no_beta-s0" / "trace.parquet"
    t = pd.read_parquet(trace)
    t.loc[(t.phase == "train") & (t["round"] == 0) & (t.request_key != ""), "request_key"] = "other"
    t.to_parquet(trace)
    ok, detail = _a3_shared_warmup(out, cfg, want, set(want))
    assert not ok and "the same requests in both traces: False" in detail
