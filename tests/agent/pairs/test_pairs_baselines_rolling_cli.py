"""`localfin pairs baselines`: the rolling yearly baseline study from the command line."""

from __future__ import annotations

import json
from pathlib import Path

POOL = "tech=CIRQ,LMNS,VTRX"


def test_rolling_baselines_command_writes_every_method_per_year(
    cli, synthetic_store_path: Path, tmp_path: Path
):
    out = tmp_path / "rolling"
    run = cli(
        "pairs", "baselines", "--store", synthetic_store_path, "--pool", POOL, "--years", "2022", "--out", out
    )
    assert run.code == 0, run.err
    assert f"tables: {out / 'rolling.md'}" in run.out
    doc = json.loads((out / "rolling.json").read_text(encoding="utf-8"))
    methods = {(r["method"], r["exposure"]) for r in doc["rows"]}
    assert {m for m, _ in methods} == {"long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn"}
    assert {e for _, e in methods} == {"no_beta", "beta"}
    assert all(r["year"] == 2022 and r["pool"] == "tech" for r in doc["rows"])
    assert (out / "tech" / "2022" / "runs").is_dir()


def test_rolling_baselines_command_refuses_a_bad_pool_and_years(cli, tmp_path: Path):
    bad_pool = cli("pairs", "baselines", "--pool", "tech", "--years", "2022", "--out", tmp_path / "o")
    assert bad_pool.code == 2 and "NAME=T1,T2" in bad_pool.err
    bad_years = cli("pairs", "baselines", "--pool", POOL, "--years", "2023-2005", "--out", tmp_path / "o")
    assert bad_years.code == 2 and "FIRST <= LAST" in bad_years.err
    assert not (tmp_path / "o").exists()
