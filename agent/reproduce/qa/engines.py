"""The engines a FinAcumen run opens: the solver's and, where the judge is a separate model, the
judge's (an in-process engine beside the solver's, or a client of the judge's server). The run
(:mod:`agent.reproduce.run`) opens them; a dry run (:mod:`agent.reproduce.dry_run`) and the
per-node servers (:mod:`agent.reproduce.cluster_plan`) print them."""

from __future__ import annotations

from typing import Any

from agent.reproduce import engine_plan as placing
from agent.reproduce.spec import ReproConfig
from serving.engines.engine_args import engine_pins
from serving.engines.vllm_engine import EngineOptions
from serving.models.registry import Registry
from serving.open import BackendSpec, registry_with

__all__ = ["judge_engine", "engine_specs"]


def judge_engine(
    plan: Any, registry: Registry | None, *, own: bool, placed: placing.Placement | None = None
) -> tuple[Registry, BackendSpec, BackendSpec | None]:
    """The registry the run opens its engines from, the solver's backend and the judge's own,
    if it needs one: a separate judge model gets a second in-process engine beside the
    solver's (each where ``placed`` puts it: the judge at ``judge_gpu_memory`` of its GPU, the
    solver on what is left) or a client of its server (``judge_base_url``)."""
    reg = registry_with(plan.model, "", registry)
    pins = engine_pins(plan)

    def layout(key: str, role: str) -> Any:
        return placed.layout_for(key, role) if placed is not None else None

    solver = BackendSpec(
        plan.backend,
        plan.model,
        base_url=plan.base_url,
        engine=EngineOptions(**pins, layout=layout(plan.model, "solver") if plan.backend == "vllm" else None),
    )
    if not own or not plan.separate_judge or not plan.needs_judge:
        return reg, solver, None
    if plan.backend == "openai":
        return reg, solver, BackendSpec("openai", plan.judge, base_url=plan.judge_base_url or plan.base_url)
    judge_pins = {**pins, "quantization": None, "pipeline_parallel": 1}
    judge = BackendSpec(
        "vllm", plan.judge, engine=EngineOptions(**judge_pins, layout=layout(plan.judge, "judge"))
    )
    return reg, solver, judge


def engine_specs(
    cfg: ReproConfig, placed: placing.Placement, registry: Registry | None
) -> list[tuple[str, Any]]:
    """(label, backend spec) of the engines a full FinAcumen run opens on ``placed``: the
    solver and a separate judge (what :func:`agent.reproduce.run.reproduce` opens; a dry run prints them)."""
    assert cfg.qa is not None
    _, solver, judge = judge_engine(cfg.qa, registry, own=True, placed=placed)
    out = [("solver", solver)] if solver.kind == "vllm" else []
    if judge is not None and judge.kind == "vllm":
        out.append(("judge", judge))
    return out
