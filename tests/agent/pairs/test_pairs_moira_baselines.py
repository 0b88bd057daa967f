"""Baselines inside a Moira experiment (``[baselines]``): config parsing and validation, the run
folders next to the agent's with the right exposures and seeds, results identical to calling the
baseline runner directly, FinMem's calls batched in the agent's lockstep rounds, journaled and
replayed on resume, and an interrupted experiment resuming to the identical result."""

from __future__ import annotations

import dataclasses
import json
import tomllib

import pandas as pd
import pytest
from moira_support import scripted, small_config, small_store, toml_text, with_finmem

from agent.data.store import MarketStore
from agent.pairs.baselines.config import BASELINE_METHODS, BaselinesConfig
from agent.pairs.baselines.eg_ddqn import DDQNConfig
from agent.pairs.baselines.eg_z import EGZConfig
from agent.pairs.baselines.finmem.calls import DECISION_CALL, REFLECTION_CALL
from agent.pairs.baselines.finmem.run import FinMemConfig
from agent.pairs.baselines.runner import RunSettings, run_baseline
from agent.pairs.experiment.config import parse_config
from agent.pairs.experiment.run import run_experiment
from agent.pairs.market.records import read_json
from bank.embedder import HashingEmbedder
from localfin.errors import ConfigError
from serving.chat.scripted import ScriptedBackend

EMB = HashingEmbedder(dim=64)
SHAPE = {
    "experiment": {"seeds": [0, 1], "exposures": ["no_beta", "beta"]},
    "windows": {"test_end": "2015-02-27"},
    "policy": {"max_cycles": 1},
}
#: every baseline; DDQN and FinMem shrunk so the test stays cheap
BASELINES = {
    "baselines": {"methods": list(BASELINE_METHODS)},
    "baselines.eg_ddqn": {"episodes": 2, "min_replay": 32, "history_sessions": 120},
    "baselines.finmem": {"momentum_sessions": 2, "news_per_leg": 1},
}


def _text(**extra: dict) -> str:
    _, text = small_config(small_store(), **SHAPE)
    if "baselines" in extra:  # replaces the helper's "no baseline" table
        text = text.replace("[baselines]\nmethods = []\n", "")
    return text + toml_text(extra)


def _cfg(text: str):
    return parse_config(tomllib.loads(text))


# -- config -------------------------------------------------------------------------------------


def test_baselines_default_to_all_and_an_empty_list_means_none():
    _, text = small_config(small_store())
    no_table = text.replace("[baselines]\nmethods = []\n", "")
    assert "[baselines]" not in no_table
    assert _cfg(no_table).baselines.methods == BASELINE_METHODS
    assert _cfg(text).baselines.methods == ()


def test_baselines_per_method_settings_reach_their_configs():
    cfg = _cfg(
        _text(
            **{
                "baselines.eg_z": {"entry_z": 1.5, "exit_z": 0.25},
                "baselines.eg_ddqn": {"episodes": 3},
                "baselines.finmem": {"momentum_sessions": 7},
                "baselines.finmem.character": {"mode": "risk_averse"},
                "baselines.finmem.memory.short": {"top_k": 2},
            }
        ).replace("[baselines]\nmethods = []\n", "")
    )
    b = cfg.baselines
    assert b.eg_z == EGZConfig(entry_z=1.5, exit_z=0.25)
    assert b.eg_ddqn == DDQNConfig(episodes=3)
    assert b.finmem.momentum_sessions == 7 and b.finmem.character.mode == "risk_averse"
    assert b.finmem.memory.short.top_k == 2
    # FinMem answers on the experiment's model and sampling
    assert b.finmem.model == cfg.model.backbone and b.finmem.temperature == cfg.model.temperature


@pytest.mark.parametrize(
    ("table", "body", "message"),
    [
        ("baselines", {"methods": ["eg_z", "lstm"]}, "allowed: long_short, short_long"),
        ("baselines", {"methods": ["eg_z", "eg_z"]}, "repeats"),
        ("baselines", {"method": ["eg_z"]}, "baselines.method; allowed: methods, eg_z"),
        ("baselines.eg_z", {"entry": 2.0}, "baselines.eg_z.entry; allowed: entry_z"),
        ("baselines.eg_z", {"entry_z": 0.1}, "entry_z=0.1; allowed"),
        ("baselines.eg_ddqn", {"episodes": "many"}, "baselines.eg_ddqn.episodes='many'"),
        ("baselines.finmem", {"max_tokens_decision": 5}, "max_tokens_decision=5; allowed: 0"),
        ("baselines.finmem.character", {"mode": "bold"}, "allowed: risk_seeking"),
    ],
)
def test_bad_baseline_settings_are_errors_naming_the_key(table, body, message):
    text = _text(**{table: body})
    if table == "baselines":
        text = text.replace("[baselines]\nmethods = []\n", "")
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        _cfg(text)


# -- runs -----------------------------------------------------------------------------------------


def _backend() -> ScriptedBackend:
    """The Moira script plus a FinMem one (decisions follow the trading z shown)."""
    return with_finmem(scripted())


class _Batches:
    """Records the call types of every backend call (one lockstep round each)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.batches = inner, inner.name, []

    def chat(self, requests):
        self.batches.append([r.call_type for r in requests])
        return self.inner.chat(requests)

    def close(self) -> None:
        return None


class _Dies(_Batches):
    """Fails on its ``n``-th call (nothing of that call is journaled), like a killed engine."""

    def __init__(self, inner, n: int) -> None:
        super().__init__(inner)
        self.n = n

    def chat(self, requests):
        if len(self.batches) + 1 >= self.n:
            raise RuntimeError("engine died")
        return super().chat(requests)


@pytest.fixture(scope="module")
def experiment(tmp_path_factory):
    text = _text(**BASELINES)
    cfg = _cfg(text)
    out = tmp_path_factory.mktemp("bl") / "exp"
    backend = _Batches(_backend())
    res = run_experiment(cfg, out, config_text=text, backend=backend, embedder=EMB)
    return cfg, text, res, backend


def _drop_replayed(doc):
    """FinMem counts the calls its run got from the journal; everything else must be identical."""
    if isinstance(doc, dict):
        return {k: _drop_replayed(v) for k, v in doc.items() if k != "replayed"}
    return doc


def _docs(out) -> dict[str, dict]:
    return {
        p.parent.name: _drop_replayed(read_json(p)) for p in sorted((out / "runs").glob("*/metrics.json"))
    }


def _steps(out) -> dict[str, pd.DataFrame]:
    return {p.parent.name: pd.read_parquet(p) for p in sorted((out / "runs").glob("*/steps.parquet"))}


def test_baselines_run_in_the_experiment_folder_with_its_exposures_and_seeds(experiment):
    cfg, _, res, _ = experiment
    docs = _docs(res.out_dir)
    expected = {f"full-{e}-s{s}" for e in cfg.exposures for s in cfg.seeds}
    for m in ("long_short", "short_long", "equal_weight", "eg_z"):
        expected |= {f"{m}-{e}" for e in cfg.exposures}  # deterministic: once per exposure
    for m in ("eg_ddqn", "finmem"):
        expected |= {f"{m}-{e}-s{s}" for e in cfg.exposures for s in cfg.seeds}
    assert set(docs) == expected
    agent_n = docs["full-no_beta-s0"]["metrics"]["n_transitions"]
    for rid, d in docs.items():
        if rid.startswith("full-"):
            assert d["kind"] == "moira"
            continue
        assert d["kind"] == "baseline" and rid.startswith(d["method"])
        assert rid.split("-")[1] == d["exposure"]
        assert d["metrics"]["n_transitions"] == agent_n  # the agent's test window
        assert d["extra"]["settings"]["cost_bps"] == cfg.cost_bps
    assert docs["eg_ddqn-beta-s1"]["seed"] == 1 and docs["finmem-no_beta-s1"]["seed"] == 1
    summary = json.loads((res.out_dir / "summary.json").read_text())
    assert sorted(b["run_id"] for b in summary["baselines"]) == sorted(
        set(docs) - {r for r in docs if r[:5] == "full-"}
    )
    assert "finmem_decision" in summary["tokens_by_call_type_runs"]
    md = (res.out_dir / "summary.md").read_text()
    assert "| eg_z-no_beta | eg_z |" in md and "| finmem-beta-s1 | finmem |" in md
    man = json.loads((res.out_dir / "manifest.json").read_text())
    assert "finmem-beta-s0" in man["baseline_runs"] and man["config"]["baselines"]["methods"]


def test_baselines_equal_calling_the_runner_directly(experiment, tmp_path):
    cfg, _, res, _ = experiment
    docs, steps = _docs(res.out_dir), _steps(res.out_dir)
    settings = RunSettings(screen=cfg.screen, cost_bps=cfg.cost_bps)
    w = cfg.windows
    b = cfg.baselines
    with MarketStore(cfg.store, create=False) as store:
        pool = store.tickers(until=w.test_end)
        for config, exposure, seed, rid in [
            (b.eg_z, "beta", 0, "eg_z-beta"),
            (b.eg_ddqn, "no_beta", 1, "eg_ddqn-no_beta-s1"),
            (b.rule_configs()[2], "no_beta", 0, "equal_weight-no_beta"),
        ]:
            direct = run_baseline(
                store,
                config,
                pool=pool,
                train=(w.train_start, w.train_end),
                test=(w.test_start, w.test_end),
                exposure=exposure,
                seed=seed,
                out_dir=tmp_path,
                settings=settings,
                run_id=rid,
            )
            assert read_json(direct.run_dir / "metrics.json") == docs[rid]
            pd.testing.assert_frame_equal(pd.read_parquet(direct.run_dir / "steps.parquet"), steps[rid])


def test_finmem_calls_share_the_agents_lockstep_rounds(experiment):
    _, _, res, backend = experiment
    mixed = [b for b in backend.batches if "direction" in b and DECISION_CALL in b]
    assert mixed, "no round carried both the agent's and FinMem's calls"
    assert res.rounds == len(backend.batches)
    finmem_calls = sum(b.count(DECISION_CALL) + b.count(REFLECTION_CALL) for b in backend.batches)
    engine = {
        t["call_type"]: t
        for t in json.loads((res.out_dir / "summary.json").read_text())["tokens_by_call_type_engine"]
    }
    assert engine[DECISION_CALL]["calls"] + engine[REFLECTION_CALL]["calls"] == finmem_calls > 0


def test_rerun_replays_finmem_and_reuses_finished_baselines(experiment):
    cfg, text, res, _ = experiment
    before_docs, before_steps = _docs(res.out_dir), _steps(res.out_dir)
    # an incomplete baseline folder is redone; the complete ones are kept
    (res.out_dir / "runs" / "eg_ddqn-beta-s0" / "training.json").unlink()
    fresh = _Batches(_backend())
    again = run_experiment(cfg, res.out_dir, config_text=text, backend=fresh, resume=True, embedder=EMB)
    assert fresh.batches == [] and again.model_calls == 0
    man = json.loads((res.out_dir / "manifest.json").read_text())
    n_rule = len(
        [
            r
            for r in before_docs
            if r.split("-")[0] in ("long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn")
        ]
    )
    assert man["baseline_runs_reused_on_resume"] == n_rule - 1
    assert _docs(res.out_dir) == before_docs
    after = _steps(res.out_dir)
    for rid, frame in before_steps.items():
        pd.testing.assert_frame_equal(frame, after[rid])


def test_an_interrupted_experiment_resumes_to_the_identical_result(experiment, tmp_path):
    cfg, text, res, backend = experiment
    out = tmp_path / "exp"
    dying = _Dies(_backend(), n=len(backend.batches) // 2)
    with pytest.raises(RuntimeError, match="engine died"):
        run_experiment(cfg, out, config_text=text, backend=dying, embedder=EMB)
    resumed = _Batches(_backend())
    run_experiment(cfg, out, config_text=text, backend=resumed, resume=True, embedder=EMB)
    sent_before = sum(len(b) for b in dying.batches)
    assert 0 < sum(len(b) for b in resumed.batches) == sum(len(b) for b in backend.batches) - sent_before
    assert _docs(out) == _docs(res.out_dir)
    a, b = _steps(out), _steps(res.out_dir)
    assert set(a) == set(b)
    for rid in a:
        pd.testing.assert_frame_equal(a[rid], b[rid])


def test_no_baselines_leaves_the_agent_alone(tmp_path):
    _, text = small_config(small_store(), **SHAPE)
    cfg = _cfg(text)
    # no method; FinMem's (unused) settings start from [model]: backbone, sampling, budgets
    fm = dataclasses.replace(
        FinMemConfig(),
        model=cfg.model.backbone,
        temperature=0.0,
        max_tokens_decision=0,
        max_tokens_reflection=0,
        decoding=cfg.model.decoding,
    )
    assert cfg.baselines == BaselinesConfig(methods=(), finmem=fm)
    res = run_experiment(cfg, tmp_path / "o", config_text=text, backend=scripted())
    assert res.baselines == [] and all(
        p.name.startswith("full-") for p in (tmp_path / "o" / "runs").iterdir()
    )


def test_the_agents_runs_are_unchanged_by_the_baselines_beside_them(experiment, tmp_path):
    """Same prompts, same decisions, same trace: FinMem sharing the rounds changes nothing the
    agent sees (its causality tests hold with or without baselines)."""
    _, text, res, _ = experiment
    alone_text = text.replace("[baselines]\nmethods = [", "[baselines]\nmethods = []\n# was [", 1)
    alone = run_experiment(_cfg(alone_text), tmp_path / "alone", config_text=alone_text, backend=scripted())
    assert alone.baselines == []
    with_b, without = _docs(res.out_dir), _docs(alone.out_dir)
    assert set(without) == {r for r in with_b if r.startswith("full-")}
    for rid, doc in without.items():
        assert doc == with_b[rid]
        pd.testing.assert_frame_equal(
            pd.read_parquet(alone.out_dir / "runs" / rid / "trace.parquet"),
            pd.read_parquet(res.out_dir / "runs" / rid / "trace.parquet"),
        )
