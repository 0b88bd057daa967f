"""How a config with several stages (a Moira table: one stage per backbone) runs on an inventory:
all its backbones at once, or its stages one after another. ``reproduce plan`` prints the
choice and ``reproduce serve`` starts the servers of the placement it holds; both call
:func:`run_layout`, so they cannot disagree. The run calls those servers (``--ray``); on one
machine without them ``reproduce run`` serves the stages one after another itself
(:mod:`agent.reproduce.stage_run`), whichever mode the plan chose.

**Stages** (:func:`agent.reproduce.engine_plan.place`): each backbone on its own, taking what is
free of every GPU it is on (up to 0.90), as many replicas as its lock-step round keeps busy.
Nothing else fits beside a stage, so the stages run one after another; the table's wall time
is the sum of the stages' times.

**All at once** (:func:`together`): every backbone on GPUs of its own at the same time. Each
keeps the tensor x pipeline layout its stage has (the smallest that holds its weights and one
full-context sequence in 0.90 of a GPU), so a server's flags differ from its stage's in the
number of replicas only. Disjoint GPUs rather than shares of shared GPUs (a fit that puts two
backbones on one GPU is refused): the placement function gives an engine what is free up to
0.90, and a backbone's speed on GPUs of its own is what the time model
(:mod:`agent.reproduce.gpu_plan`) estimates; two backbones on one GPU would share its compute
and bandwidth, which the model does not know. The replicas are handed out one at a time to the
backbone whose estimated time is then the longest, as long as one more replica still has work
and shortens that time (at most its stage's replicas, which the lock-step round bounds) and the
one placement function still places every backbone with its stage's layout
(:func:`serving.hardware.placement.place_stage`, the backbones in decreasing tensor-group size so
aligned groups pack); so the slowest backbone finishes as early as this greedy hand-out allows.
The table's wall time is the longest backbone's.

The times are :func:`agent.reproduce.gpu_plan.estimate`'s vLLM-aware hours from the config's
own counts (one call a decision step, no rehearsal): every node computes the same placement
without the plan's rehearsal files. All at once is chosen where every backbone fits and its
time is not longer than the stages'; else the stages, one after another. On one machine
``reproduce run`` starts and stops each stage's servers itself
(:mod:`agent.reproduce.stage_run`); on several nodes each node serves one stage at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from agent.reproduce import engine_plan as placing
from agent.reproduce.engine_plan import Placement
from agent.reproduce.gpu_plan import Work, engine_works, estimate
from agent.reproduce.hardware import GPU_KINDS, GpuKind, gpu_kind
from agent.reproduce.spec import ReproConfig
from serving.hardware.gpus import Inventory
from serving.hardware.placement import EnginePlacement, place_stage
from serving.models.registry import Registry

__all__ = [
    "TOGETHER",
    "STAGES",
    "ONE",
    "EngineTime",
    "RunLayout",
    "run_layout",
    "together",
    "format_run_layout",
]

#: every backbone at once, each on GPUs of its own
TOGETHER = "together"
#: one stage after another
STAGES = "stages"
#: a single stage (FinAcumen, or a Moira config of one backbone): nothing to choose
ONE = "one"
#: the kind the times are on where the inventory's GPUs are of no known kind (they then only compare)
REFERENCE_KIND = "h100"


@dataclass(frozen=True)
class EngineTime:
    """One engine's estimated time: its stage, registry key, replicas and hours."""

    stage: int
    key: str
    replicas: int
    hours: float


@dataclass(frozen=True)
class RunLayout:
    """The mode, the placement the servers and the run use, and both modes' times.

    ``staged``: the placement one stage after another; ``placement``: the one used (``staged``
    unless ``mode`` is :data:`TOGETHER`); ``stage_times`` / ``together_times``: per engine on
    each (``together_times`` empty where all at once does not fit); ``why``: why this mode;
    ``gpu``: the GPU kind timed (``timed`` False: the inventory's GPUs are of no known kind,
    the times are on the reference kind and only compare)."""

    mode: str
    placement: Placement
    staged: Placement
    stage_times: tuple[EngineTime, ...] = ()
    together_times: tuple[EngineTime, ...] = ()
    why: str = ""
    gpu: str = ""
    timed: bool = True

    @property
    def staged_hours(self) -> float:
        """The stages one after another: the sum of their times."""
        return sum(t.hours for t in self.stage_times)

    @property
    def together_hours(self) -> float:
        """All at once: the longest backbone's time (0: does not fit)."""
        return max((t.hours for t in self.together_times), default=0.0)


def _kind(inventory: Inventory) -> tuple[GpuKind, bool]:
    """The inventory's GPU kind (a declared kind, or one whose name the GPU's name holds), else
    the reference kind and False."""
    names = {g.name for n in inventory.nodes for g in n.gpus}
    if len(names) == 1:
        (name,) = names
        low = name.lower()
        if low in GPU_KINDS:
            return gpu_kind(low), True
        found = [k for k in GPU_KINDS if k.split("-")[0] in low.replace(" ", "-").split("-")]
        if len(found) == 1:
            return gpu_kind(found[0]), True
    return gpu_kind(REFERENCE_KIND), False


def _hours(e: EnginePlacement, works: dict[str, Work], gpu: GpuKind, registry: Registry, n: int = 0) -> float:
    """Hours of engine ``e`` (on its first ``n`` replicas; 0: all of them)."""
    if n and e.layout is not None:
        e = replace(e, layout=replace(e.layout, replicas=e.layout.replicas[:n]))
    return estimate(e.key, works[e.key], e, gpu, registry).hours_vllm


def _fit(
    staged: tuple[EnginePlacement, ...], counts: dict[str, int], inventory: Inventory
) -> list[EnginePlacement] | None:
    """Every engine of ``staged`` at once with ``counts`` replicas and its stage's layout, by
    the one placement function (None: one of them does not fit so)."""
    order = sorted(staged, key=lambda e: (-(e.layout.tensor_parallel * e.layout.pipeline_parallel), e.stage))
    needs = [replace(e.need, min_tp=e.layout.tensor_parallel, max_replicas=counts[e.key]) for e in order]
    placed = {p.key: p for p in place_stage(needs, inventory, 0)}
    out = []
    owner: dict[tuple[str, int], str] = {}
    for e in staged:
        p = placed[e.key]
        if not p.fits or p.device != "cuda" or p.layout is None:
            return None
        same = (p.layout.tensor_parallel, p.layout.pipeline_parallel) == (
            e.layout.tensor_parallel,
            e.layout.pipeline_parallel,
        )
        if not same or len(p.layout.replicas) != counts[e.key]:
            return None
        for g in (g for r in p.layout.replicas for g in r.gpus):  # GPUs of its own: none shared
            if owner.setdefault((g.node, g.index), e.key) != e.key:
                return None
        out.append(p)
    return out


def together(
    staged: Placement, works: dict[str, Work], gpu: GpuKind, registry: Registry
) -> tuple[Placement | None, tuple[EngineTime, ...], str]:
    """Every backbone of ``staged`` at once on GPUs of its own (module docstring): the placement
    (one stage, 0), each engine's time on it, and, where it does not fit, why (else "")."""
    engines = staged.engines
    keys = [e.key for e in engines]
    if len(set(keys)) != len(keys):
        return None, (), "a backbone key repeats in two stages (one server per key at once)"
    if any(e.device != "cuda" or e.layout is None for e in engines):
        return None, (), "no GPU in the inventory: the CPU build runs one engine at a time"
    counts = {k: 1 for k in keys}
    placed = _fit(engines, counts, staged.inventory)
    if placed is None:
        gpus = sum(e.layout.tensor_parallel * e.layout.pipeline_parallel for e in engines)
        return None, (), (
            f"one replica of each backbone needs {gpus} GPUs of their own ("
            + ", ".join(f"{e.key} {e.layout.tensor_parallel * e.layout.pipeline_parallel}" for e in engines)
            + f"); {staged.inventory.describe()} has {staged.inventory.count}"
        )  # fmt: skip
    most = {e.key: len(e.layout.replicas) for e in engines}
    time = {e.key: _hours(e, works, gpu, registry, 1) for e in engines}
    full = {e.key: e for e in engines}
    stuck: set[str] = set()
    while True:
        grow = [k for k in keys if counts[k] < most[k] and k not in stuck]
        if not grow:
            break
        k = max(grow, key=lambda x: (time[x], -keys.index(x)))
        trial = {**counts, k: counts[k] + 1}
        faster = _hours(full[k], works, gpu, registry, trial[k])
        got = _fit(engines, trial, staged.inventory) if faster < time[k] else None
        if got is None:  # one more replica does not fit, or would not shorten its time
            stuck.add(k)
            continue
        counts, placed, time[k] = trial, got, faster
    times = tuple(EngineTime(0, p.key, len(p.layout.replicas), time[p.key]) for p in placed)
    return Placement(staged.config, staged.inventory, tuple(placed)), times, ""


def run_layout(cfg: ReproConfig, inventory: Inventory, *, registry: Registry) -> RunLayout:
    """How ``cfg`` runs on ``inventory`` (module docstring): the mode, the placement used and
    the times of both modes."""
    staged = placing.place(cfg, inventory, registry=registry)
    stages = staged.stages()
    if len(stages) <= 1 or not staged.ok:
        return RunLayout(ONE if len(stages) <= 1 else STAGES, staged, staged, why=staged.problem())
    if inventory.empty:
        return RunLayout(
            STAGES, staged, staged, why="no GPU in the inventory: the CPU build runs one engine at a time"
        )
    gpu, known = _kind(inventory)
    works, _ = engine_works(cfg, registry, by_engine=True)
    stage_times = tuple(
        EngineTime(e.stage, e.key, len(e.layout.replicas), _hours(e, works, gpu, registry))
        for e in staged.engines
        if e.layout is not None
    )
    placed, times, why = together(staged, works, gpu, registry)
    lay = RunLayout(STAGES, staged, staged, stage_times, times, why, gpu.name, known)
    if placed is None:
        return lay
    if lay.together_hours > lay.staged_hours:
        return replace(
            lay,
            why=f"all at once fits but takes {lay.together_hours:.2f} h, longer than the stages' "
            f"{lay.staged_hours:.2f} h",
        )
    return replace(lay, mode=TOGETHER, placement=placed, why="")


def format_run_layout(lay: RunLayout, config: str, *, nodes: int = 1) -> str:
    """The mode as text: which, with each stage's time and the whole table's (both modes)."""
    if lay.mode == ONE:
        return ""
    est = "" if lay.timed else f" (GPUs of no known kind: times on {lay.gpu}, to compare only)"
    basis = f"estimated from the config's counts, one call a step, vLLM-aware{est}"
    n = len(lay.stage_times)
    lines = []
    if lay.mode == TOGETHER:
        slow = max(lay.together_times, key=lambda t: t.hours)
        lines.append(
            f"how the table runs: all backbones at once, each on GPUs of its own: the whole table "
            f"{lay.together_hours:.2f} h (the slowest backbone, {slow.key}), against "
            f"{lay.staged_hours:.2f} h with its {n} stages one after another ({basis})"
        )
        if nodes == 1:
            lines.append(
                "  all at once on this machine: its one command below, `ray start` with its "
                f"LOCALFIN_ENDPOINTS, then `localfin reproduce run {config} --ray auto`; "
                f"`localfin reproduce run {config}` alone runs the stages one after another"
            )
    else:
        where = (
            f"`localfin reproduce run {config}` on one machine starts each stage's servers, runs "
            "that stage's part of the matrix and stops them before the next"
            if nodes == 1
            else "on several nodes, serve one stage at a time on every node (the commands below)"
        )
        lines.append(
            f"how the table runs: stages one after another, started and stopped by the run: "
            f"{lay.staged_hours:.2f} h for its {n} stages ({where}; {basis})"
        )
        if lay.why:
            lines.append(f"  all backbones at once: not chosen: {lay.why}")
    at = {t.key: t for t in lay.together_times}
    head = ("stage", "engine", "one after another", "all at once")
    rows = [head]
    for t in lay.stage_times:
        a = at.get(t.key)
        rows.append(
            (
                str(t.stage),
                t.key,
                f"{t.replicas} replica(s), {t.hours:.2f} h",
                f"{a.replicas} replica(s), {a.hours:.2f} h" if a is not None else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    return "\n".join(lines)
