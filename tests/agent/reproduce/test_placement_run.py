"""One placement for plan, check and run: each asks agent.reproduce.engine_plan.place, and the run
opens every engine with the layout that call returned; a config that cannot be placed stops
before any engine or folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent.reproduce import engine_plan as placing
from agent.reproduce import run as run_mod
from agent.reproduce.engine_plan import declared_inventory
from agent.reproduce.spec import load_repro
from localfin.errors import ConfigError
from serving import open as serving_open
from serving.models.registry import default_registry


class _Stop(Exception):
    """Raised by the spy once it has seen what it needs: no engine starts."""


@pytest.fixture()
def spy_place(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any, Any]]:
    """Every call of the one placement function: (config name, inventory, placement returned)."""
    calls: list[tuple[Any, Any, Any]] = []
    real = placing.place

    def spy(cfg: Any, inventory: Any, *, registry: Any) -> Any:
        p = real(cfg, inventory, registry=registry)
        calls.append((cfg.name, inventory, p))
        return p

    monkeypatch.setattr(placing, "place", spy)
    return calls


def _opened(monkeypatch: pytest.MonkeyPatch, stop_after: int) -> list[Any]:
    """Record every backend spec the run opens; stop the run at the ``stop_after``-th. The data
    and weights checks that run before any engine pass here (they have their own tests): no
    market store is imported and no checkpoint copied for a run that stops at its first engine."""
    from agent.pairs.experiment import matrix, preflight

    monkeypatch.setattr(matrix, "check_data", lambda cfg: None)
    monkeypatch.setattr(preflight, "check_data", lambda cfg: None)
    monkeypatch.setattr(preflight, "preflight", lambda cfg, registry=None, weights=True: ())
    specs: list[Any] = []

    class _Dummy:
        name = "dummy"

        def chat(self, requests: Any) -> Any:
            raise _Stop

        def close(self) -> None:
            pass

    def fake_open(spec: Any, registry: Any = None) -> Any:
        specs.append(spec)
        if len(specs) >= stop_after:
            raise _Stop
        return _Dummy()

    monkeypatch.setattr(serving_open, "open_backend", fake_open)
    return specs


def test_a_moira_run_serves_each_stage_where_the_placement_puts_it(
    spy_place: list, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Table 3 on 2 H200: six stages, one after another; the run starts stage 0's servers (the
    servers `reproduce serve` starts for that placement, test_node_serve.py compares their flags
    with the in-process engines') before any call."""
    from agent.reproduce import stage_run
    from agent.reproduce.cluster_plan import node_starts

    inv = declared_inventory("h200", 2)
    _opened(monkeypatch, stop_after=1)
    started: list[tuple[int, list[Any]]] = []

    def start(self: Any, stage: int, mine: Any) -> list[Any]:
        started.append((stage, list(mine)))
        raise _Stop

    monkeypatch.setattr(stage_run.ServedStages, "_start", start)
    cfg = load_repro("moira_table3_main")
    with pytest.raises(_Stop):
        run_mod.reproduce(
            cfg, tmp_path / "out", registry=default_registry(), inventory=inv, html_report=False
        )
    ((name, seen_inv, placed),) = spy_place  # the run asked the placement once, on its inventory
    assert name == "moira_table3_main" and seen_inv is inv
    ((stage, mine),) = started
    assert stage == 0 and mine == [
        s for s in node_starts(cfg, placed, default_registry()) if s.server.stage == 0
    ]
    (l8,) = mine
    assert (
        l8.server.key == "llama-3.1-8b" and l8.layout.replicas == placed.layout_for("llama-3.1-8b").replicas
    )
    assert len(l8.layout.replicas) == 2 and l8.server.gpus == (0, 1)  # one replica per H200
    assert l8.options.async_scheduling is False and l8.options.worker_start_method == "spawn"


def test_a_finacumen_run_opens_the_solver_and_the_judge_as_placed(
    spy_place: list, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    inv = declared_inventory("h100", 1)
    specs = _opened(monkeypatch, stop_after=2)
    cfg = load_repro("finacumen_table1")
    with pytest.raises(_Stop):
        run_mod.reproduce(
            cfg, tmp_path / "out", registry=default_registry(), inventory=inv, data_root=tmp_path
        )
    ((_, _, placed),) = spy_place
    solver, judge = specs
    assert (solver.model, judge.model) == ("qwen3-vl-8b", "qwen3-4b-nothink")
    assert solver.engine.layout == placed.layout_for("qwen3-vl-8b", "solver")
    assert judge.engine.layout == placed.layout_for("qwen3-4b-nothink", "judge")
    assert (solver.engine.layout.share, judge.engine.layout.share) == (0.65, 0.25)


def test_plan_and_check_ask_the_same_function(spy_place: list, cli: Any) -> None:
    r = cli("reproduce", "plan", "finacumen_table1", "--gpus", "2", "--gpu", "h100")
    assert r.code == 0, r.err
    cli("reproduce", "check", "finacumen_table1", "--gpus", "2", "--gpu", "h100")
    r = cli("reproduce", "run", "finacumen_table1", "--dry-run", "--gpus", "2", "--gpu", "h100")
    assert r.code == 0, r.err
    assert [c[0] for c in spy_place] == ["finacumen_table1"] * 3
    layouts = {str(c[2].layout_for("qwen3-vl-8b", "solver")) for c in spy_place}
    assert len(layouts) == 1  # plan, check and the dry run see one placement


def test_a_config_that_cannot_be_placed_stops_before_any_engine_or_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    specs = _opened(monkeypatch, stop_after=1)
    out = tmp_path / "out"
    with pytest.raises(ConfigError) as info:
        run_mod.reproduce(
            load_repro("moira_table3_main"), out, registry=default_registry(),
            inventory=declared_inventory("h200", 1),
        )  # fmt: skip
    msg = str(info.value)
    assert msg.startswith(
        "moira_table3_main cannot be placed, nothing started: engine llama-3.1-70b (backbone)"
    )
    assert "what would place it: more GPUs: tp 2" in msg and 'quantization = "fp8"' in msg
    assert specs == [] and not out.exists()


def test_check_refuses_an_unplaceable_config_with_what_would_place_it(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCALFIN_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("LOCALFIN_DATA_DIR", str(tmp_path / "data"))
    r = cli("reproduce", "check", "moira_table3_main", "--gpus", "1", "--gpu", "h100")
    assert r.code == 1
    (line,) = [x for x in r.out.splitlines() if ": placement: " in x]
    assert line.startswith(
        "MISSING moira_table3_main: placement: 1 x h100 (74.5 GiB) (declared: 1 x h100): llama-3.1-70b "
        "(backbone): does not fit: 145.5 GiB a GPU at tp 1 (131.5 weights + 10.0 for one 32,768-token "
        "sequence + 4.0 overhead), 0.90 of a 74.5 GiB GPU holds 67.1"
    )
    assert "fix: llama-3.1-70b: more GPUs: tp 4 (4 GPUs of 75 GiB on one node" in line
    assert (
        "qwen3-32b: more GPUs: tp 2 (2 GPUs of 75 GiB on one node; this inventory has at most 1 per "
        "node) or FP8" in line
    )
    r = cli("reproduce", "check", "moira_table3_main", "--gpus", "1")
    assert r.code == 2 and "--gpus and --gpu go together" in r.err
    with pytest.raises(ConfigError, match="cannot be placed"):
        run_mod.run_placement(
            load_repro("moira_table3_main"), default_registry(), declared_inventory("h100", 1)
        )


def test_pairs_run_opens_the_backbone_and_finmem_where_placed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`localfin pairs run` on a GPU with FinMem on its own model: both engines placed at once
    (agent.reproduce.engine_plan.place_experiment), each opened with its layout."""
    from agent import api
    from serving.hardware import gpus

    root = Path(__file__).resolve().parents[3]
    text = (root / "agent/pairs/configs/demo.toml").read_text(encoding="utf-8")
    text = text.replace('backbone = "smollm2-135m"', 'backbone = "qwen3-32b"').replace(
        "[baselines.finmem]\n", '[baselines.finmem]\nmodel = "qwen3-4b-nothink"\n', 1
    )
    cfg = tmp_path / "exp.toml"
    cfg.write_text(text, encoding="utf-8")
    monkeypatch.setattr(gpus, "engine_platform", lambda: "cuda")
    monkeypatch.setattr(gpus, "visible_inventory", lambda: declared_inventory("h200", 1))
    specs = _opened(monkeypatch, stop_after=2)
    with pytest.raises(_Stop):
        api.run_experiment(cfg, tmp_path / "out", registry=default_registry())
    backbone, finmem = specs
    assert (backbone.model, finmem.model) == ("qwen3-32b", "qwen3-4b-nothink")
    shares = backbone.engine.layout.share, finmem.engine.layout.share
    assert shares[0] > 0.5 and shares[1] < 0.25 and sum(shares) <= 0.90
    monkeypatch.setattr(gpus, "visible_inventory", lambda: declared_inventory("l40s", 1))
    with pytest.raises(ConfigError, match="nothing started: engine qwen3-32b"):
        api.run_experiment(cfg, tmp_path / "out2", registry=default_registry())
