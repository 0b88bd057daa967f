"""``localfin audit``: a scripted experiment (every Moira call type and FinMem's)
passes with 0 violations; a provenance row edited to a date after its decision, a payload builder
that reads the next session's prices, a call whose provenance row is gone, and a folder written
before provenance existed are each caught (exit 1, or 2 for the old folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store, with_finmem

from agent.pairs.experiment.audit import audit_runs
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.provenance import PROVENANCE_FILE
from agent.pairs.market.view import MarketView
from bank.embedder import HashingEmbedder

#: a short experiment on the small market that makes every call type: Moira's selection,
#: direction, reflection, break check (a boundary every 10 sessions) and news verification
#: (the planted restatement), FinMem's decision and reflection
SHAPE = {
    "policy": {"max_cycles": 1},
    "baselines": {"methods": ["finmem", "long_short"]},
    "lifecycle": {"validation_period": 10},
}


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg, text = small_config(small_store(), **SHAPE)
    out = tmp_path_factory.mktemp("audit") / "exp"
    run_experiment(
        cfg, out, config_text=text, backend=with_finmem(scripted()), embedder=HashingEmbedder(dim=64)
    )
    return out


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("journal.sqlite"))
    return dst


def test_a_scripted_experiment_has_no_violation(demo_run, cli):
    audits = audit_runs(demo_run)
    by_method = {a.method for a in audits if a.model_calls}
    assert by_method == {"moira", "finmem"}
    kinds = set().union(*(a.calls for a in audits))
    assert {"pair_selection", "direction", "reflection", "break_check", "news_verify"} <= kinds
    assert {"finmem_decision", "finmem_reflection"} <= kinds
    assert all(a.violations == [] for a in audits)
    # one provenance row per request the run built; news dates were recorded (the market has news)
    moira = next(a for a in audits if a.method == "moira")
    prov = pd.read_parquet(demo_run / moira.run / PROVENANCE_FILE)
    assert moira.rows == len(prov) >= moira.model_calls
    assert (prov["news_items"] > 0).any() and (prov["price_series"] > 0).all()
    assert (prov.loc[prov["call_type"] == "pair_selection", "screen_end"] != "").all()
    r = cli("audit", demo_run)
    assert r.code == 0, r.err
    assert r.out.strip().splitlines()[-1].endswith("0 violation(s)")
    assert "no model calls" in r.out  # the rule baselines


@pytest.mark.parametrize("column", ["price_max_date", "news_max_date", "screen_end"])
def test_a_provenance_date_after_the_decision_is_caught(demo_run, tmp_path, cli, column):
    out = _copy(demo_run, tmp_path / "x")
    audits = audit_runs(out)
    moira = next(a for a in audits if a.method == "moira")
    p = out / moira.run / PROVENANCE_FILE
    prov = pd.read_parquet(p)
    rows = prov.index[prov["call_type"] == "pair_selection"] if column == "screen_end" else prov.index
    k = rows[len(rows) // 2]
    later = (pd.Timestamp(prov.at[k, "decision_date"]) + pd.Timedelta(days=1)).date().isoformat()
    prov.at[k, column] = later
    prov.to_parquet(p, index=False)
    r = cli("audit", out)
    assert r.code == 1
    lines = [ln for ln in r.out.splitlines() if ln.startswith("VIOLATION")]
    assert len(lines) == 1 and later in lines[0] and prov.at[k, "call_type"] in lines[0]


def test_a_call_without_its_provenance_row_is_caught(demo_run, tmp_path, cli):
    out = _copy(demo_run, tmp_path / "x")
    fm = next(a for a in audit_runs(out) if a.method == "finmem")
    p = out / fm.run / PROVENANCE_FILE
    prov = pd.read_parquet(p)
    prov.iloc[1:].to_parquet(p, index=False)
    r = cli("audit", out / fm.run)
    assert r.code == 1 and "no provenance row for this call" in r.out


def test_a_payload_reading_the_next_session_is_caught(tmp_path, monkeypatch, cli):
    """The direction payload's spread state taken one session late: the recorded provenance says
    so, and the audit fails the run."""
    real = MarketView.pair_state

    def leaky(self, a, b, upto):
        return real(self, a, b, min(upto + 1, len(self.dates) - 1))

    monkeypatch.setattr(MarketView, "pair_state", leaky)
    cfg, text = small_config(small_store(), policy={"max_cycles": 0})
    run_experiment(cfg, tmp_path / "leak", config_text=text, backend=scripted())
    r = cli("audit", tmp_path / "leak")
    assert r.code == 1
    leaks = [ln for ln in r.out.splitlines() if ln.startswith("VIOLATION")]
    assert leaks and all("direction" in ln and "after the decision session" in ln for ln in leaks)


def test_a_folder_without_provenance_and_a_bad_path_are_clear_errors(demo_run, tmp_path, cli):
    out = _copy(demo_run, tmp_path / "old")
    for p in out.glob(f"runs/*/{PROVENANCE_FILE}"):
        p.unlink()
    r = cli("audit", out)
    assert r.code == 2 and "written before runs recorded what each call saw" in r.err
    r = cli("audit", tmp_path / "absent")
    assert r.code == 2 and "does not exist" in r.err
    (tmp_path / "empty").mkdir()
    r = cli("audit", tmp_path / "empty")
    assert r.code == 2 and "holds no run folder" in r.err
