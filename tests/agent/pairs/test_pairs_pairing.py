"""What a seed's Beta and No-Beta runs share (``[experiment] pairing``): ``paired`` (the default)
gives them one training phase and one first test selection; ``independent`` gives each exposure
its own training, its own first selection and its own seed stream."""

from __future__ import annotations

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store

from agent.pairs.experiment.run import run_experiment
from localfin.errors import ConfigError
from serving.journal import Journal

BOTH = {"exposures": ["no_beta", "beta"]}


def _run(tmp_path, pairing: str):
    cfg, text = small_config(
        small_store(),
        experiment={**BOTH, "pairing": pairing},
        windows={"test_end": "2015-02-06"},
        policy={"max_cycles": 1},
    )
    out = tmp_path / pairing
    res = run_experiment(cfg, out, config_text=text, backend=scripted())
    with Journal(out / "journal.sqlite") as j:
        records = j.records()
    return cfg, res, out, records


def _first_test_select(out, run_id: str) -> str:
    t = pd.read_parquet(out / "runs" / run_id / "trace.parquet")
    return t[(t.phase == "test") & (t.kind == "select")].iloc[0].request_key


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    root = tmp_path_factory.mktemp("pairing")
    return {p: _run(root, p) for p in ("paired", "independent")}


def test_paired_exposures_share_one_training_and_one_first_selection(both) -> None:
    _, res, out, records = both["paired"]
    by = {r["run_id"]: r["extra"] for r in res.runs}
    assert set(by) == {"full-no_beta-s0", "full-beta-s0"}
    for e in by.values():
        assert e["training_shared_with"] == ["full-no_beta-s0", "full-beta-s0"] and e["pairing"] == "paired"
    assert _first_test_select(out, "full-no_beta-s0") == _first_test_select(out, "full-beta-s0")
    # one warmup: a single first-session selection request of the training window
    starts = [
        r
        for r in records
        if r["request"]["call_type"] == "pair_selection"
        and '"step 001"' in r["request"]["messages"][-1]["content"]
    ]
    assert {r["request"]["seed"] for r in records} == {0}
    assert len(starts) == 2  # the training window's and the shared test window's


def test_independent_exposures_train_select_and_draw_seeds_on_their_own(both) -> None:
    cfg, res, out, records = both["independent"]
    by = {r["run_id"]: r["extra"] for r in res.runs}
    for rid, e in by.items():
        assert e["training_shared_with"] == [rid] and e["warmup_shared_with"] == [rid]
        assert e["pairing"] == "independent"
    seeds = {cfg.request_seed(0, "no_beta"), cfg.request_seed(0, "beta")}
    assert len(seeds) == 2 and 0 not in seeds
    # every request carries its exposure's stream; each exposure made its own training and selection
    assert {r["request"]["seed"] for r in records} == seeds
    assert _first_test_select(out, "full-no_beta-s0") != _first_test_select(out, "full-beta-s0")
    reflections = [r for r in records if r["request"]["call_type"] == "reflection"]
    assert {r["request"]["seed"] for r in reflections} == seeds


def test_the_request_seed_of_each_pairing() -> None:
    cfg, _ = small_config(small_store(), experiment={**BOTH, "seeds": [0, 1, 2]})
    assert [cfg.request_seed(s, e) for s in (0, 1, 2) for e in ("no_beta", "beta")] == [0, 0, 1, 1, 2, 2]
    ind, _ = small_config(small_store(), experiment={**BOTH, "seeds": [0, 1, 2], "pairing": "independent"})
    streams = [ind.request_seed(s, e) for s in (0, 1, 2) for e in ("no_beta", "beta")]
    assert len(set(streams)) == 6 and all(0 <= x < 2**31 for x in streams)
    assert streams == [ind.request_seed(s, e) for s in (0, 1, 2) for e in ("no_beta", "beta")]


def test_an_unknown_pairing_names_the_allowed_values() -> None:
    with pytest.raises(ConfigError, match=r"experiment.pairing='shared'; allowed: paired, independent"):
        small_config(small_store(), experiment={"pairing": "shared"})
