"""`--smoke`: a shipped config shrunk to CPU size runs to the end on the real engine and writes a
report. The default suite checks the shrunk windows; the slow suite runs one Moira config on the
session's tiny model and every shipped config through the CLI on the CPU model (the default
suite's rehearsal runs a Moira and a FinAcumen config end to end on the real engine)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.reproduce.run import SMOKE_TEST, SMOKE_TRAIN, reproduce, smoke_document
from agent.reproduce.spec import config_names, load_repro


def test_smoke_windows_map_onto_the_synthetic_market(tmp_path: Path) -> None:
    from agent.pairs.experiment.demo import synthetic_store

    cfg = load_repro("moira_table4_a1")
    doc = smoke_document(cfg, synthetic_store(tmp_path), "smollm2-135m")
    (w,) = doc["windows"]
    assert w["name"] == "a1-long" and w["train_start"] < w["train_end"] < w["test_start"] <= w["test_end"]
    assert doc["backbones"] == [{"key": "smollm2-135m", "name": "cpu"}]
    assert doc["matrix"]["seeds"] == [0] and "pool" not in doc["experiment"]
    from agent.data.store import MarketStore

    with MarketStore(doc["experiment"]["store"], create=False) as s:
        assert len(s.calendar(w["train_start"], w["train_end"])) == SMOKE_TRAIN
        assert len(s.calendar(w["test_start"], w["test_end"])) == SMOKE_TEST
        assert len(s.calendar(None, w["train_start"])) > 2520  # the screen has its full lookback


@pytest.mark.slow
def test_smoke_one_config_on_the_tiny_model(vllm_backend, tiny_registry, tmp_path: Path) -> None:
    cfg = load_repro("moira_table7_a4")
    res = reproduce(
        cfg, tmp_path / "a4", smoke=True, backend=vllm_backend, registry=tiny_registry, model="tiny-qwen3"
    )
    assert res.report.is_file()
    doc = json.loads((tmp_path / "a4" / "reproduction.json").read_text(encoding="utf-8"))
    settings = {(r["variant"], r["exposure"]) for r in doc["rows"]}
    assert {("full", "no_beta"), ("full", "beta"), ("a4-no-reselection", "beta")} <= settings
    assert ("full minus a4-no-reselection", "beta") in settings
    assert (tmp_path / "a4" / "report" / "index.html").is_file()
    summary = json.loads((tmp_path / "a4" / "matrix" / "cpu" / "main" / "summary.json").read_text("utf-8"))
    assert len(summary["runs"]) == 4 and summary["model_calls"] > 0
    # A4 from one start: both variants (and both exposures) share one training phase and one
    # first test selection, so they start from the same pair
    first = {r["run_id"]: r["extra"]["initial_pair"] for r in summary["runs"]}
    for exp in ("no_beta", "beta"):
        assert first[f"full-{exp}-s0"] == first[f"a4-no-reselection-{exp}-s0"], first
    assert all(len(r["extra"]["training_shared_with"]) == 4 for r in summary["runs"])
    text = res.report.read_text(encoding="utf-8")
    assert "SMOKE RUN" in text and "Table 7 (A4)" in text and "27.8" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", config_names())
def test_smoke_every_config_through_the_cli(cli, name: str, tmp_path: Path) -> None:
    out = tmp_path / name
    extra = []
    if "authors" in name or "leak" in name:  # these send the authors' texts: their checkout is needed
        snapshot = (
            Path(__file__).resolve().parents[3].parent
            / "shared"
            / "vendor"
            / ("FinAcumen-16246593c75e81fac0b57c05e739761dae3e6fe9")
        )
        if not snapshot.is_dir():
            pytest.skip(f"the authors' code snapshot is absent ({snapshot})")
        extra = ["--authors-code", snapshot]
    run = cli("reproduce", "smoke", name, "--out", out, *extra)
    assert run.code == 0, run.err
    assert f"{name}: report {out / 'reproduction.md'}" in run.out
    doc = json.loads((out / "reproduction.json").read_text(encoding="utf-8"))
    assert doc["mode"] == "smoke" and doc["rows"]
