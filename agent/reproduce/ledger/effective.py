"""The effective settings of a reproduction config: every value that its run uses, defaults
included, as flat dotted keys (the keys of the protocol ledger, :mod:`agent.reproduce.ledger.book`).

Moira (a matrix document): every cell's experiment config as the run loads it (the matrix's own
expansion, baselines merged in), flattened (``policy`` and ``selection`` live in each
``variants[]`` element), plus ``backbone.*``: the registry entry of the cell's backbone (context,
dtype, parsers, default budget). FinAcumen (a ``[qa]`` plan): the plan (``qa.*``, its sources as
``qa.bank[]`` and ``qa.sets[]``), the solver settings it resolves to for its model
(``solver.*``: what the plan leaves unset, as the solver takes it) and ``backbone.*`` of the
model; a plan with arms (``[[qa.arms]]``), each arm's plan, scoped by its arm.

A key whose value differs between the cells (or array elements) of one config is one
:class:`Setting` per distinct value, each with its ``scope`` (the cells or elements that use
it); a key with one value has an empty scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from agent.reproduce.ledger.book import canon
from agent.reproduce.spec import ReproConfig
from localfin import configfile as cf

__all__ = [
    "Setting",
    "scope_text",
    "flatten",
    "effective_settings",
    "default_settings",
    "BACKBONE_FIELDS",
    "GIVEN",
]

#: Key prefixes the documents of :func:`default_settings` set themselves (the rest are defaults).
GIVEN = (
    "experiment.store",
    "experiment.pool",
    "windows.",
    "model.backbone",
    "backbone.",
    "qa.model",
    "qa.store",
    "qa.bank[]",
    "qa.sets[]",
)

#: The registry fields of a backbone that its runs use (``backbone.<field>``).
BACKBONE_FIELDS = (
    "key",
    "max_model_len",
    "default_max_tokens",
    "thinking_default",
    "repetition_penalty",
    "dtype",
    "chat_template",
    "reasoning_parser",
    "tool_call_parser",
    "accepts_images",
    "tensor_parallel_size",
    "gpu_memory_utilization",
    "timeout_s",
)
#: Solver fields the ``[qa]`` plan always sets under its own names (listed there as ``qa.*``);
#: a solver field the plan may leave unset is listed twice: ``qa.*`` as the config sets it and
#: ``solver.*`` as the solver takes it (the model's default when unset).
_PLAN_SOLVER = {
    "model",
    "max_steps",
    "thought_chars",
    "observation_chars",
    "gate_rejections",
    "action_schema",
    "base_mode",
    "base_max_tokens",
    "gate",
    "loop",
    "answer_reading",
    "base_reading",
}
#: Experiment keys that are the cell's identity, not a setting (its folder and store path are
#: listed as ``experiment`` keys below).
_ELEMENT_NAMES = ("name", "label")


@dataclass(frozen=True)
class Setting:
    """One effective setting: its dotted ``key``, its ``value`` (plain data) and the ``scope``
    that uses this value ("" = the whole config; else e.g. ``variant full`` or ``cells
    l8/main``)."""

    key: str
    value: Any
    scope: str = ""
    #: every ``(cell, element)`` that uses this value ("" where there is none): the ledger
    #: resolves a value per use, so a row scoped to some cells never speaks for the others
    uses: tuple[tuple[str, str], ...] = ()


def flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any, str]]:
    """``(key, value, element scope)`` of every leaf of ``table``; an array of tables becomes
    ``key[]`` leaves scoped by each element's ``name`` or ``label`` (else its index)."""
    out: list[tuple[str, Any, str]] = []
    for k, v in table.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out += flatten(v, key)
        elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
            for i, el in enumerate(v):
                who = next((str(el[n]) for n in _ELEMENT_NAMES if n in el), str(i))
                what = key.rsplit(".", 1)[-1].rstrip("s") or key
                for kk, vv, sc in flatten(el, f"{key}[]"):
                    out.append((kk, vv, f"{what} {who}" + (f", {sc}" if sc else "")))
        else:
            out.append((key, canon(v), ""))
    return out


def _merge(rows: Iterable[tuple[str, Any, str, str]]) -> list[Setting]:
    """Settings from ``(key, value, element scope, cell)`` rows: one per key and distinct value,
    scoped by the cells/elements using it unless every one does."""
    by_key: dict[str, list[tuple[Any, str, str]]] = {}
    for key, value, el, cell in rows:
        by_key.setdefault(key, []).append((value, el, cell))
    out: list[Setting] = []
    for key, uses in by_key.items():
        groups: list[tuple[Any, list[tuple[str, str]]]] = []
        for value, el, cell in uses:
            for g in groups:
                if g[0] == value:
                    g[1].append((cell, el))
                    break
            else:
                groups.append((value, [(cell, el)]))
        if len(groups) == 1:
            out.append(Setting(key, groups[0][0], "", tuple(dict.fromkeys(groups[0][1]))))
        else:
            out += [Setting(key, v, scope_text(w), tuple(dict.fromkeys(w))) for v, w in groups]
    return out


def scope_text(uses: Iterable[tuple[str, str]]) -> str:
    """The scope of a value used by ``uses`` (``(cell, element)`` pairs), as a Setting shows it."""
    return "; ".join(dict.fromkeys(", ".join(x for x in use if x) for use in uses))


def _backbone(key: str, registry: Any = None) -> dict[str, Any]:
    from serving.open import model_spec

    spec = model_spec(key, registry)
    return {f: canon(getattr(spec, f)) for f in BACKBONE_FIELDS}


def _moira_rows(cfg: ReproConfig, registry: Any = None) -> list[tuple[str, Any, str, str]]:
    from agent.pairs.experiment.config import config_to_dict
    from agent.reproduce.moira_run import expand_cells, with_baselines

    doc, _ = with_baselines(cfg.document, cfg.baselines)
    rows = []
    for folder, key, exp, _text in expand_cells(doc, cfg.source.parent):
        table = config_to_dict(exp)
        table.pop("name", None)
        table["backbone"] = _backbone(key, registry)
        rows += [(k, v, el, folder) for k, v, el in flatten({"experiment": {}, **_moira_table(table)})]
    return rows


def _moira_table(table: dict[str, Any]) -> dict[str, Any]:
    """The experiment's own keys under ``experiment``; its tables at the top."""
    tables = ("windows", "model", "prompt", "screen", "lifecycle", "variants", "baselines", "backbone")
    out: dict[str, Any] = {"experiment": {k: v for k, v in table.items() if k not in tables}}
    out.update({k: table[k] for k in tables if k in table})
    return out


def _solver(plan: Any, registry: Any = None) -> dict[str, Any]:
    from agent.qa.solver.solver_config import solver_config_for
    from serving.open import ModelFacts, model_spec

    spec = model_spec(plan.model, registry)
    facts = ModelFacts(
        key=spec.key,
        display_name=spec.display_name,
        device="gpu" if spec.stand_in else spec.device,
        max_model_len=spec.max_model_len,
        default_max_tokens=spec.default_max_tokens,
        accepts_images=spec.accepts_images,
        thinking_default=spec.thinking_default,
    )
    solver = solver_config_for(facts, **plan.solver_overrides())
    if plan.sampling_overrides():  # the plan's temperature and seed, as the run applies them
        from dataclasses import replace

        solver = replace(solver, sampling=replace(solver.sampling, **plan.sampling_overrides()))
    return {f.name: canon(getattr(solver, f.name)) for f in fields(solver) if f.name not in _PLAN_SOLVER}


def _qa_rows(cfg: ReproConfig, registry: Any = None) -> list[tuple[str, Any, str, str]]:
    """The plan's settings; a plan with arms: each arm's plan (``qa.arms`` expanded), scoped by
    its arm."""
    assert cfg.qa is not None
    rows = []
    for arm, plan in cfg.qa_arms():
        qa = cf.plain(plan)
        qa.pop("arms", None)
        if not qa["bank"]:  # no bank sources: nothing to list
            del qa["bank"]
        table = {"qa": qa, "solver": _solver(plan, registry), "backbone": _backbone(plan.model, registry)}
        cell = f"arm {arm.name}" if arm is not None else ""
        rows += [(k, v, el, cell) for k, v, el in flatten(table)]
    return rows


def effective_settings(cfg: ReproConfig, registry: Any = None) -> list[Setting]:
    """Every effective setting of ``cfg`` (see the module docstring), in file order."""
    rows = _moira_rows(cfg, registry) if cfg.kind == "moira" else _qa_rows(cfg, registry)
    return _merge(rows)


def default_settings(kind: str, registry: Any = None) -> list[Setting]:
    """The effective settings of a config that names only what is required (every other key at
    its code default): Moira, an experiment with a store, a pool and windows on the first
    paper backbone; FinAcumen, a plan with its model, one bank source and one evaluation set.
    :data:`GIVEN` lists the keys these documents set (not code defaults)."""
    from agent.reproduce.spec import parse_repro

    if kind == "moira":
        doc: dict[str, Any] = {
            "reproduce": {
                "name": "defaults",
                "paper": "moira",
                "table": "-",
                "title": "code defaults",
                "kind": "moira",
                "differs": ["-"],
                "paper_sessions": {"main": [27, 75]},
            },
            "matrix": {"name": "defaults"},
            "backbones": ["llama-3.1-8b"],
            "windows": [
                {
                    "name": "main",
                    "train_start": "2025-01-02",
                    "train_end": "2025-02-11",
                    "test_start": "2025-02-12",
                    "test_end": "2025-05-30",
                }
            ],
            "experiment": {"store": "market.sqlite", "pool": ["AAPL", "MSFT"]},
        }
    elif kind == "qa":
        doc = {
            "reproduce": {
                "name": "defaults",
                "paper": "finacumen",
                "table": "-",
                "title": "code defaults",
                "kind": "qa",
                "differs": ["-"],
            },
            "qa": {
                "model": "qwen3-vl-8b",
                "store": "market.sqlite",
                "bank": [
                    {
                        "label": "FinMMR Easy validation",
                        "dataset": "finmmr",
                        "path": "finmmr",
                        "split": "validation",
                    }
                ],
                "sets": [{"label": "FinMMR Easy", "dataset": "finmmr", "path": "finmmr", "split": "test"}],
            },
        }
    else:
        raise ValueError(f"kind={kind!r}; allowed: moira, qa")
    return effective_settings(parse_repro(doc, Path("defaults.toml")), registry)
