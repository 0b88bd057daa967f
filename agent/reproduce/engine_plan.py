"""Where every engine of a reproduction config runs: one placement, used by ``localfin
reproduce plan`` (which prints it), ``reproduce check`` (which fails when it cannot place the
config, saying what would) and ``reproduce run`` (which opens each engine with its layout).

:func:`place` turns a config into stages of :class:`~serving.hardware.placement.EngineNeed` and fits each
stage onto an :class:`~serving.hardware.gpus.Inventory` (:func:`serving.hardware.placement.place_stage`, whose
docstring states the rules):

- Moira: one stage per engine the experiment matrix starts (one per backbone entry, in the
  matrix's order; thinking on/off entries are separate engines, started one after the other).
  FinMem's fixed model is one of the backbones (the matrix runs FinMem in its cells), so it is
  counted there. Demand: the runs of a cell's lock-step round (seeds x exposures x variants,
  and FinMem's seeds x exposures in its cell). A backbone served over HTTP (``backend =
  "openai"``) starts no engine here and is not placed.
- FinAcumen: one stage, the solver and (a separate judge with ``backend = "vllm"``) the judge
  beside it, one replica at ``qa.judge_gpu_memory`` of its GPU; the solver takes what is left,
  on every GPU (its questions are many).
- ``localfin pairs run`` (:func:`place_experiment`): the backbone and, when FinMem runs on its
  own model, that model beside it (one replica, the smallest share that holds it).
- A rehearsal (:func:`place_stand_ins`): one tiny stand-in engine per architecture, all at once,
  each with the share its weights and KV cache need.

Sizes come from the published architecture facts (:mod:`agent.reproduce.hardware`) where the
key has them, so a plan made without the weights equals the run's; else from the checkpoint
folder (:func:`serving.hardware.checkpoint_facts.checkpoint_facts`).

Inventories: :func:`serving.hardware.gpus.visible_inventory` (the run and ``check``), or
:func:`declared_inventory` (``plan --gpus N --gpu KIND``, or ``--nodes N --gpus-per-node G``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.reproduce.hardware import ARCH_FACTS, gpu_kind
from agent.reproduce.spec import ReproConfig
from localfin.errors import ConfigError
from serving.hardware.checkpoint_facts import checkpoint_facts, with_facts
from serving.hardware.gpus import EngineLayout, Inventory
from serving.hardware.placement import SMALL_OVERHEAD_GIB, EngineNeed, EnginePlacement, place_stage
from serving.models.registry import ModelSpec, Registry

__all__ = [
    "Placement",
    "place",
    "engine_needs",
    "place_experiment",
    "place_stand_ins",
    "declared_inventory",
    "need_for",
    "format_placement",
]


@dataclass(frozen=True)
class Placement:
    """Every engine of one config on one inventory, in run order (stage, then engine)."""

    config: str
    inventory: Inventory
    engines: tuple[EnginePlacement, ...]

    @property
    def ok(self) -> bool:
        """Whether every engine is placed."""
        return all(e.fits for e in self.engines)

    @property
    def unplaced(self) -> tuple[EnginePlacement, ...]:
        return tuple(e for e in self.engines if not e.fits)

    def stages(self) -> list[tuple[EnginePlacement, ...]]:
        out: dict[int, list[EnginePlacement]] = {}
        for e in self.engines:
            out.setdefault(e.stage, []).append(e)
        return [tuple(v) for _, v in sorted(out.items())]

    def find(self, key: str, role: str | None = None) -> EnginePlacement:
        """The placement of engine ``key`` (and ``role``, where one key has several)."""
        for e in self.engines:
            if e.key == key and (role is None or e.need.role == role):
                return e
        raise ConfigError(
            f"no engine {key!r} in the placement of {self.config}; allowed: "
            f"{', '.join(dict.fromkeys(e.key for e in self.engines))}"
        )

    def layout_for(self, key: str, role: str | None = None) -> EngineLayout | None:
        """The layout engine ``key`` starts with (None: the CPU build, vLLM's own defaults)."""
        e = self.find(key, role)
        if not e.fits:
            raise ConfigError(self.problem())
        return e.layout if e.device == "cuda" else None

    def problem(self) -> str:
        """What cannot be placed and what would place it ("" when everything is placed)."""
        parts = []
        for e in self.unplaced:
            fix = "; or ".join(e.remedies)
            parts.append(f"engine {e.key} ({e.need.role}) cannot be placed on {self.inventory.describe()}: "
                         f"{e.note}; what would place it: {fix}")  # fmt: skip
        return " | ".join(parts)


def declared_inventory(
    gpu: str, gpus: int | None = None, *, nodes: int = 1, gpus_per_node: int | None = None
) -> Inventory:
    """An inventory of GPUs of kind ``gpu`` (``h100``, ``h200``, ...): ``gpus`` on one node, or
    ``nodes`` nodes of ``gpus_per_node`` each (``gpus`` then, if given, must equal their
    product). Memory: the kind's data-sheet figure (:attr:`GpuKind.memory_gib`)."""
    kind = gpu_kind(gpu)
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise ConfigError(f"--nodes {nodes!r}; allowed: a whole number >= 1")
    per = gpus_per_node
    if per is None:
        if gpus is None:
            raise ConfigError("--gpus or --gpus-per-node is missing; allowed: a whole number >= 1")
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise ConfigError(f"--gpus {gpus!r}; allowed: a whole number >= 1")
        if gpus % nodes:
            raise ConfigError(f"--gpus {gpus} over --nodes {nodes}; allowed: a multiple of the nodes")
        per = gpus // nodes
    elif gpus is not None and gpus != per * nodes:
        raise ConfigError(
            f"--gpus {gpus} differs from --nodes {nodes} x --gpus-per-node {per}; allowed: give one of them"
        )
    if isinstance(per, bool) or not isinstance(per, int) or per < 1:
        raise ConfigError(f"--gpus-per-node {per!r}; allowed: a whole number >= 1")
    return Inventory.uniform(nodes, per, kind.name, kind.memory_gib)


def need_for(
    spec: ModelSpec,
    *,
    role: str,
    demand: int = 0,
    share: float | None = None,
    max_replicas: int = 0,
    quantization: str | None = None,
    pipeline_parallel: int = 1,
    declare: str = "",
    share_setting: str = "",
    kv_cache_gib: float = 0.0,
    max_model_len: int | None = None,
) -> EngineNeed:
    """The :class:`EngineNeed` of one engine serving ``spec`` (sizes: published facts, else the
    checkpoint folder; a CPU entry or a tiny model: small overhead, and only ``kv_cache_gib`` of
    KV cache, default 2 GiB, when it runs on a GPU); ``max_model_len``: the context the engine is
    started with when the config sets one (``[model] max_model_len``), else the registry's."""
    small = spec.device == "cpu" or spec.source == "built"
    need = EngineNeed(
        key=spec.key,
        role=role,
        max_model_len=max_model_len or spec.max_model_len,
        min_tp=spec.tensor_parallel_size,
        pipeline_parallel=pipeline_parallel,
        quantization=quantization or None,
        share=share,
        max_share=min(spec.gpu_memory_utilization, 0.90),
        demand=demand,
        max_replicas=max_replicas,
        gpu_only=spec.device == "gpu" and not spec.stand_in,
        declare=declare,
        share_setting=share_setting,
        overhead_gib=SMALL_OVERHEAD_GIB if small else EngineNeed.overhead_gib,
        kv_cache_gib=(kv_cache_gib or 2.0) if small else kv_cache_gib,
    )
    facts = ARCH_FACTS.get(spec.key)
    if facts is not None and not spec.stand_in:
        return replace(
            need,
            params_b=facts.params_b,
            kv_bytes_per_token=facts.kv_bytes_per_token(),
            attention_heads=facts.attn_heads,
            kv_heads=facts.kv_heads,
        )
    try:
        path = spec.resolve_path()
    except Exception:  # noqa: BLE001 - absent weights: the need is unsized, and says so
        path = None
    return with_facts(need, checkpoint_facts(path), small=small)


def _model_table(doc: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    return {**dict(doc.get("model") or {}), **dict(overrides)}


def _moira_stages(cfg: ReproConfig, registry: Registry) -> list[list[EngineNeed]]:
    from agent.reproduce.moira.run import expand_cells, with_baselines

    doc, _ = with_baselines(cfg.document, cfg.baselines)
    stages: list[list[EngineNeed]] = []
    seen: list[tuple[Any, ...]] = []
    for _folder, key, exp, _text in expand_cells(doc, cfg.source.parent):
        m = exp.model
        if m.backend != "vllm":
            continue
        engine = (key, m.quantization, m.pipeline_parallel, m.max_num_seqs, m.kv_cache_gib, m.max_model_len)
        runs = len(exp.run_ids())
        fm = len(exp.seeds) * len(exp.exposures) if "finmem" in exp.baselines.methods else 0
        if seen and seen[-1] == engine:  # the next windows set of the same engine: its demand
            stages[-1][0] = replace(stages[-1][0], demand=max(stages[-1][0].demand, runs + fm))
            continue
        seen.append(engine)
        where = f"the [[backbones]] entry of {key}"
        stages.append(
            [
                need_for(
                    registry.get(key),
                    role="backbone" + (" + FinMem" if fm else ""),
                    demand=runs + fm,
                    quantization=m.quantization or None,
                    pipeline_parallel=m.pipeline_parallel,
                    declare=f'quantization = "fp8" in {where}',
                    max_model_len=m.max_model_len,
                )
            ]
        )
    return stages


def _qa_stages(cfg: ReproConfig, registry: Registry) -> list[list[EngineNeed]]:
    plan = cfg.qa
    assert plan is not None
    if plan.backend != "vllm":
        return []
    stage = [
        need_for(
            registry.get(plan.model),
            role="solver",
            quantization=plan.quantization or None,
            pipeline_parallel=plan.pipeline_parallel,
            declare='quantization = "fp8" in [qa]',
        )
    ]
    if plan.separate_judge and plan.needs_judge:
        stage.append(
            need_for(
                registry.get(plan.judge),
                role="judge",
                share=plan.judge_gpu_memory,
                max_replicas=1,
                share_setting="qa.judge_gpu_memory",
            )
        )
    return [stage]


def engine_needs(cfg: ReproConfig, registry: Registry) -> list[list[EngineNeed]]:
    """The engines ``cfg`` starts, by stage (module docstring)."""
    return _moira_stages(cfg, registry) if cfg.kind == "moira" else _qa_stages(cfg, registry)


def _placed(name: str, stages: Sequence[Sequence[EngineNeed]], inventory: Inventory) -> Placement:
    out: list[EnginePlacement] = []
    for k, needs in enumerate(stages):
        out += place_stage(needs, inventory, k)
    return Placement(name, inventory, tuple(out))


def place(cfg: ReproConfig, inventory: Inventory, *, registry: Registry) -> Placement:
    """Every engine ``cfg`` starts, placed on ``inventory`` (module docstring)."""
    return _placed(cfg.name, engine_needs(cfg, registry), inventory)


def place_experiment(cfg: Any, inventory: Inventory, *, registry: Registry) -> Placement:
    """The engines of one Moira experiment config (``localfin pairs run``): its backbone and,
    when FinMem runs on its own model, that model beside it."""
    m = cfg.model
    if m.backend != "vllm":
        return Placement(cfg.name, inventory, ())
    runs = len(cfg.run_ids())
    fm_on = "finmem" in cfg.baselines.methods
    fm_model = cfg.baselines.finmem.model
    stage = [
        need_for(
            registry.get(m.backbone),
            role="backbone",
            demand=runs + (len(cfg.seeds) * len(cfg.exposures) if fm_on and fm_model == m.backbone else 0),
            quantization=m.quantization or None,
            pipeline_parallel=m.pipeline_parallel,
            declare='quantization = "fp8" in [model]',
            max_model_len=m.max_model_len,
        )
    ]
    if fm_on and fm_model and fm_model != m.backbone:
        fm_len = cfg.baselines.finmem.max_model_len
        stage.insert(
            0,
            need_for(
                registry.get(fm_model), role="finmem", max_replicas=1, kv_cache_gib=8.0, max_model_len=fm_len
            ),
        )
    return _placed(cfg.name, [stage], inventory)


def place_stand_ins(
    keys: Iterable[str],
    registry: Registry,
    inventory: Inventory,
    *,
    kv_cache_gib: float = 1.0,
    name: str = "",
) -> Placement:
    """The rehearsal's engines (one per key given: the first key of each architecture's group
    in the stand-in registry), all at once, each with the share its weights and
    ``kv_cache_gib`` of KV cache need."""
    needs = [
        need_for(registry.get(k), role="stand-in", max_replicas=1, kv_cache_gib=kv_cache_gib)
        for k in dict.fromkeys(keys)
    ]
    return _placed(name or "rehearsal", [needs], inventory)


def _gpus(e: EnginePlacement) -> str:
    """``node0: 0|1|2 @ 0.90`` (replicas split by ``|``, a replica's GPUs by ``,``)."""
    if e.layout is None or not e.layout.replicas:
        return "-"
    groups: dict[tuple[str, float], list[str]] = {}
    for r in e.layout.replicas:
        where = " + ".join(r.nodes)
        groups.setdefault((where, r.share), []).append(",".join(str(g.index) for g in r.gpus))
    return "; ".join(f"{w}: {'|'.join(ix)} @ {share:.2f}" for (w, share), ix in groups.items())


def _dtype(e: EnginePlacement) -> str:
    """The weights' format of a placed engine: the declared quantization or the checkpoint's."""
    if e.layout is not None and e.layout.quantization:
        return e.layout.quantization
    return {2.0: "bf16", 4.0: "fp32"}.get(float(e.need.bytes_per_param), f"{e.need.bytes_per_param:g} B")


def format_placement(p: Placement) -> str:
    """The placement as a table: one row per engine, then what cannot be placed."""
    head = f"placement of {p.config} on {p.inventory.describe()} ({p.inventory.source or 'declared'}):"
    cols = ("stage", "engine", "role", "tp x pp", "weights", "replicas", "GPUs @ share", "GiB/GPU")
    rows = [(*cols, "KV room", "full seqs")]
    for e in p.engines:
        if e.device == "cpu":
            rows.append((str(e.stage), e.key, e.need.role, "-", "-", "1", "CPU build", "-", "-", "-"))
            continue
        if not e.fits:
            rows.append((str(e.stage), e.key, e.need.role, "-", "-", "0", "does not fit", "-", "-", "-"))
            continue
        lay = e.layout
        assert lay is not None
        rows.append(
            (
                str(e.stage),
                e.key,
                e.need.role,
                f"{lay.tensor_parallel} x {lay.pipeline_parallel}",
                _dtype(e) if e.need.sized else "?",
                str(len(lay.replicas)),
                _gpus(e),
                f"{e.weights_gib:.1f}" if e.need.sized else "?",
                f"{e.kv_room_gib:.1f}" if e.need.sized else "?",
                str(e.full_sequences) if e.need.sized else "?",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = [head] + ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    for e in p.engines:
        if e.fits and e.note and e.device == "cuda" and "unknown" in e.note:
            lines.append(f"  {e.key}: {e.note}")
    if not p.ok:
        lines.append("cannot be placed: " + p.problem())
    return "\n".join(lines)
