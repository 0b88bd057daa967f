"""``localfin reproduce run CONFIG --dry-run``: the arguments every engine of a full run starts
with on the GPUs, printed without starting anything (no weights, no GPU needed).

The backend specs come from the functions the run opens its engines with
(:func:`agent.reproduce.moira.run.placed_spec` for each Moira backbone, the run's
:func:`agent.reproduce.qa.engines.engine_specs` for a FinAcumen solver and its judge) on the run's
placement; each replica's ``vllm.LLM`` arguments and start-up environment are
:func:`serving.engines.engine_args.engine_arguments` on the CUDA build (what a GPU run passes, whatever
this machine has), and the ``vllm serve`` flags of the same engine follow
(:func:`serving.http.server.serve_args`).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, replace
from typing import Any

from agent.reproduce.engine_plan import Placement
from agent.reproduce.spec import ReproConfig
from serving.engines.engine_args import EngineArguments, engine_arguments
from serving.http.server import serve_args
from serving.models.registry import Registry

__all__ = ["EngineStart", "engine_starts", "format_starts", "run_specs"]


@dataclass(frozen=True)
class EngineStart:
    """One engine process of the run: which engine and replica, and its arguments."""

    label: str
    key: str
    replica: int
    arguments: EngineArguments
    serve: tuple[str, ...]


def run_specs(cfg: ReproConfig, placement: Placement, registry: Registry) -> list[tuple[str, Any]]:
    """(label, backend spec) of every engine the run opens, in run order."""
    if cfg.kind == "moira":
        from agent.pairs.experiment.matrix_config import parse_matrix
        from agent.reproduce.moira.run import placed_spec, with_baselines

        doc, _ = with_baselines(cfg.document, cfg.baselines)
        out, seen = [], set()
        for cell in parse_matrix(doc, base_dir=cfg.source.parent).cells():
            spec = placed_spec(cell, placement)
            if spec.kind != "vllm" or cell.engine_key in seen:
                continue
            seen.add(cell.engine_key)
            out.append((f"backbone {cell.backbone.name}", spec))
        return out
    from agent.reproduce.qa.engines import engine_specs

    return engine_specs(cfg, placement, registry)


def engine_starts(cfg: ReproConfig, placement: Placement, registry: Registry) -> list[EngineStart]:
    """Every engine process a full run of ``cfg`` starts on ``placement``, with its arguments."""
    out = []
    for label, spec in run_specs(cfg, placement, registry):
        entry = registry.get(spec.model)
        where = str(entry.expected_path() or f"<{entry.key}-weights-dir>")
        layout = spec.engine.layout
        replicas = range(len(layout.replicas)) if layout is not None and layout.replicas else [None]
        serve = tuple(serve_args(entry, options=spec.engine, layout=layout, platform="cuda"))
        for k in replicas:
            one = layout.one(k) if (layout is not None and k is not None) else layout
            opts = replace(spec.engine, layout=one)
            args = engine_arguments(
                entry, opts, platform="cuda", layout=one, inventory=placement.inventory, path=where
            )
            out.append(EngineStart(label, entry.key, k or 0, args, serve))
    return out


def format_starts(cfg: ReproConfig, placement: Placement, starts: list[EngineStart]) -> str:
    """The dry run as text: per engine process its ``vllm.LLM`` arguments and environment, and
    per engine the ``vllm serve`` flags that serve it the same way."""
    lines = [f"dry run of {cfg.name} on {placement.inventory.describe()}: nothing starts"]
    shown: set[tuple[str, str]] = set()
    for s in starts:
        lines.append(f"{s.label} ({s.key}), replica {s.replica}: vllm.LLM(")
        lines += [f"    {line}" for line in s.arguments.shown().splitlines()]
        lines.append(")")
        if (s.label, s.key) not in shown:
            shown.add((s.label, s.key))
            lines.append("  as a server: vllm serve MODEL " + shlex.join(s.serve))
    return "\n".join(lines)
