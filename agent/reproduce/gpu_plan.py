"""``localfin reproduce plan CONFIG --gpus N --gpu KIND``: engines, memory and an estimated
wall time of a config on GPUs, from published figures and a stated model (no GPU measured).

**Engines.** Where each engine runs is the run's own placement
(:func:`agent.reproduce.engine_plan.place`, printed first): per engine its tensor parallelism
``tp`` (the smallest power of two whose shard holds the weights and one full-context sequence
in its share of the GPU after :data:`OVERHEAD_GIB` for activations and the CUDA graphs), its
``dp`` data-parallel replicas (engine processes the run starts, as many as the work has
sequences in flight for: a lock-step round of 6 runs keeps at most 6 busy) and its memory
share, the judge's and FinMem's own engines included. The time of one checkpoint sums its
entries' work (thinking on/off entries are engines started one after the other).

**Memory per GPU.** Weights: parameters x 2 bytes (bf16) / tp. KV cache: 2 (K and V) x layers
x KV heads x head dim x 2 bytes per token, / tp, for the sequences in flight at the config's
``max_model_len`` (the worst case an engine must hold) and at the workload's mean context.

**Work.** Moira: decision steps per backbone entry of what the config runs
(:func:`agent.reproduce.moira.workload.moira_work`, the runner's own expansion and grouping), on the
config's windows at the paper's session counts: training-window passes (one warmup per training
phase, shared by A3's two conditions and, with ``pairing = "paired"``, by a seed's two
exposures; ``max_cycles`` replays at most per consolidating training) plus one test window per
run (seeds x that backbone's exposures x variants), plus FinMem's training and test sessions
where the config runs FinMem on that backbone; calls per step from the rehearsal's journal
where ``--rehearse`` has run (its calls over its own decision steps, counted the same way),
else one per step (a lower bound: say so). Tokens per call: :data:`MOIRA_PROMPT` prompt
and :data:`MOIRA_COMPLETION` completion (the paper's 1,762,999 chat tokens of one A1 run over
its 555 decision steps, about 3,200 a step, split by the reply schemas' size), plus
:data:`THINK_TOKENS` of reasoning per call for a thinking backbone (an assumption: the papers
publish no Qwen reasoning lengths). FinAcumen: the question counts of each config
(:data:`QA_QUESTIONS`, from the benchmarks' test sizes) x variants x FinAcumen's Appendix K
tokens per question (42,500 with the bank, 20,000 without), :data:`QA_CALLS` calls a question,
:data:`QA_COMPLETION_SHARE` of tokens generated; the bank build (2,400 items x K = 8) where the
config builds one.

**Time.** Prefill is compute bound: prompt tokens x 2 x parameters / (GPUs x bf16 peak x
:data:`PREFILL_EFFICIENCY`). Decode is memory-bandwidth bound: each step of a batch of B
sequences reads the weight shard and the batch's KV cache once, (weights + B x context x KV
per token) / tp / (bandwidth x :data:`DECODE_EFFICIENCY`), and yields B tokens on each replica,
as many as the sequences in flight in all (a batch rounded up does not add sequences, so one
more replica never makes an engine slower). No prefix-cache
reuse is counted (the prompts share long prefixes, so prefill is an upper bound), and prefill
and decode do not overlap.

**vLLM-aware figures** (printed beside the plain ones, from the rehearsal's journals where
``--rehearse`` has run: :mod:`agent.reproduce.prefix_reuse`). vLLM's prefix cache (on by
default) computes a prompt's KV only past the longest prefix an earlier prompt left in the
cache, and its paged KV cache holds each sequence at its actual length, not at
``max_model_len``. So: prefill counts only the prompt tokens the cache does not serve (Moira:
the share of each prompt an earlier prompt of the rehearsal shared, its system prompts and
instructions repeated by every run of a lock-step round and every session; FinAcumen: each
ReAct step resends the conversation so far, so at :data:`QA_CALLS` calls a question the cache
serves :func:`~agent.reproduce.prefix_reuse.react_hit` of its prompt tokens, from the
rehearsal's growth per step and the share of a first prompt an earlier question already holds);
the sequences in flight are as many as the demand, the engine's ``max_num_seqs``
(:data:`MAX_NUM_SEQS`) and the KV cache at the mean context allow; and where the sequences in
flight at their final context hold more tokens than the cache, the hit shrinks in proportion
(evicted prefixes are recomputed). Decode is modelled as above with that batch.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agent.reproduce import engine_plan as placing
from agent.reproduce.engine_plan import Placement, declared_inventory, format_placement
from agent.reproduce.hardware import GpuKind, arch_facts, gpu_kind
from agent.reproduce.moira.workload import BackboneWork, moira_work
from agent.reproduce.prefix_reuse import Reuse, measure_rehearsal, react_hit
from agent.reproduce.spec import ReproConfig
from localfin.errors import ConfigError
from serving.models.registry import Registry

__all__ = [
    "PREFILL_EFFICIENCY",
    "DECODE_EFFICIENCY",
    "OVERHEAD_GIB",
    "Engine",
    "Work",
    "engine_memory",
    "plan_config",
    "engine_works",
    "estimate",
    "format_plan",
    "MAX_NUM_SEQS",
]

PREFILL_EFFICIENCY = 0.40
DECODE_EFFICIENCY = 0.60
OVERHEAD_GIB = 4.0
GIB = 1024**3
MOIRA_PROMPT = 3_000
MOIRA_COMPLETION = 200
THINK_TOKENS = 1_500
QA_CALLS = 8
QA_COMPLETION_SHARE = 0.10
QA_TOKENS = {"base": 20_000, "ft": 20_000, "ft_fm": 42_500}
BANK_ITEMS, BANK_K = 2_400, 8
#: sequences the in-process engine schedules at once (serving.engines.vllm_engine.EngineOptions default)
MAX_NUM_SEQS = 64
#: test questions per QA config (the benchmarks' released test sizes, docs/reproduce.md)
QA_QUESTIONS = {
    "finacumen_table1": 8_756,
    "finacumen_table1_authors": 8_756,
    "finacumen_leak_ablation": 8_756,
    "finacumen_table2": 1_200,
    "finacumen_kmax_sweep": 500,
    "finacumen_fig2_accumulation": 2_000,
    "finacumen_tau_sweep": 0,
}


@dataclass(frozen=True)
class Work:
    """What one engine does: calls and tokens, sequences in flight, mean context."""

    calls: int
    prompt_tokens: int
    completion_tokens: int
    concurrency: int
    mean_context: int
    basis: str
    #: share of prompt tokens vLLM's prefix cache serves (module docstring), its final context
    #: per sequence (tokens; the cache's working set) and how both were found
    hit: float = 0.0
    final_context: int = 0
    reuse_basis: str = "no rehearsal journals: no prefix reuse modelled"
    #: sequences a lock-step round offers at once (0: ``concurrency``): FinAcumen's rounds hold
    #: every question of a set, which the plain figure caps at one engine's max_num_seqs
    demand: int = 0


@dataclass(frozen=True)
class Engine:
    """One checkpoint's engine on the plan's GPUs, with its memory and time."""

    key: str
    tp: int
    registry_tp: int
    dp: int
    weights_gib: float
    kv_full_gib: float
    kv_mean_gib: float
    fits: bool
    batch: int
    work: Work
    prefill_h: float
    decode_h: float
    note: str
    #: the vLLM-aware figures (module docstring)
    batch_vllm: int = 0
    hit_vllm: float = 0.0
    prefill_vllm_h: float = 0.0
    decode_vllm_h: float = 0.0
    note_vllm: str = ""

    @property
    def hours(self) -> float:
        return self.prefill_h + self.decode_h

    @property
    def hours_vllm(self) -> float:
        return self.prefill_vllm_h + self.decode_vllm_h


def engine_memory(key: str, tp: int, batch: int, context: int) -> tuple[float, float]:
    """(weights, KV cache) GiB per GPU for ``batch`` sequences of ``context`` tokens at ``tp``."""
    a = arch_facts(key)
    weights = a.params_b * 1e9 * 2 / tp / GIB
    kv = batch * context * a.kv_bytes_per_token() / tp / GIB
    return weights, kv


def _moira_work(
    cfg: ReproConfig,
    key: str,
    thinking: bool,
    per_step: float | None,
    reuse: Reuse | None = None,
    counted: BackboneWork | None = None,
) -> tuple[Work, int]:
    """The work of one backbone entry (``counted``: its
    :func:`~agent.reproduce.moira.workload.moira_work`)."""
    counted = counted or BackboneWork()
    steps = counted.steps
    calls = round(steps * (per_step if per_step is not None else 1.0))
    comp = MOIRA_COMPLETION + (THINK_TOKENS if thinking else 0)
    basis = (
        f"{steps} decision steps x {per_step:.2f} calls/step (rehearsal journal)"
        if per_step is not None
        else f"{steps} decision steps x 1 call/step (config counts; no rehearsal: a lower bound)"
    ) + f": {counted.describe()}"
    hit, how = 0.0, Work.reuse_basis
    if reuse is not None and reuse.shapes:
        hit = reuse.plain_hit()
        n = sum(s.calls for s in reuse.shapes.values())
        how = f"{hit:.0%} of the prompt characters of the rehearsal's {n} calls shared with an earlier prompt"
    work = Work(
        calls,
        calls * MOIRA_PROMPT,
        calls * comp,
        max(1, counted.runs + counted.finmem_runs),
        MOIRA_PROMPT + comp // 2,
        basis,
        hit,
        MOIRA_PROMPT + comp,
        how,
    )
    return work, steps


def _paper_sessions(cfg: ReproConfig) -> Any:
    """``(training, test)`` sessions of a windows set as the paper states them (the config's)."""
    by = {w.name: (w.paper_train_sessions, w.paper_test_sessions) for w in cfg.windows}
    return lambda cell: by[cell[1]]


def _qa_work(cfg: ReproConfig, reuse: Reuse | None = None) -> Work:
    assert cfg.qa is not None
    q = QA_QUESTIONS.get(cfg.name, 0)
    variants = list(cfg.qa.variants)
    snapshots = max(1, len(cfg.qa.bank_sizes)) if "ft_fm" in variants else 1
    k = len(cfg.qa.k_max)
    # a config with arms evaluates once per arm and builds a bank per arm that reads no other's
    n_arms = max(1, len(cfg.qa.arms))
    n_banks = max(1, sum(1 for a in cfg.qa.arms if not a.bank_of))
    tokens = n_arms * sum(q * QA_TOKENS[v] * (snapshots * k if v == "ft_fm" else 1) for v in variants)
    bank = n_banks * BANK_ITEMS * cfg.qa.bank_k * QA_TOKENS["base"] if cfg.qa.needs_bank else 0
    total = tokens + bank
    calls = round(total / (QA_TOKENS["base"] / QA_CALLS))
    comp = round(total * QA_COMPLETION_SHARE)
    arms = f"x {n_arms} arms " if n_arms > 1 else ""
    banks = f"{n_banks} banks of" if n_banks > 1 else "bank"
    basis = (
        f"{q} questions x variants {variants} (x {snapshots} bank sizes x {k} k_max for ft_fm) {arms}"
        "at Appendix K's "
        f"tokens/question" + (f" + {banks} {BANK_ITEMS} items x K={cfg.qa.bank_k}" if bank else "")
    )
    per_call = QA_TOKENS["ft_fm"] // QA_CALLS
    hit, final, how = 0.0, per_call, Work.reuse_basis
    solve = reuse.shapes.get("qa_solve") if reuse is not None else None
    if solve is not None and solve.growth is not None:
        g, st, n = solve.growth, solve.static, QA_CALLS
        hit = react_hit(n, g, st)
        prompt_q = QA_TOKENS["ft_fm"] * (1 - QA_COMPLETION_SHARE)
        first = prompt_q / (n + g * n * (n - 1) / 2)
        final = round(first * (1 + (n - 1) * g) + QA_TOKENS["ft_fm"] * QA_COMPLETION_SHARE / n)
        how = (
            f"ReAct: each step adds {g:.2f} x the first prompt (rehearsal, {solve.continued} continued "
            f"of {solve.calls} qa_solve calls), {st:.0%} of a first prompt shared with an earlier "
            f"question; at {n} calls a question the cache serves {hit:.0%} of its prompt tokens"
        )
    per_set = q // max(1, len(cfg.qa.sets))
    return Work(
        calls, total - comp, comp, MAX_NUM_SEQS, per_call, basis, hit, final, how, max(per_set, MAX_NUM_SEQS)
    )


def _time(
    key: str, tp: int, dp: int, batch: int, work: Work, gpu: GpuKind, hit: float = 0.0
) -> tuple[float, float]:
    """(prefill, decode) hours; ``hit``: the share of prompt tokens the prefix cache serves."""
    a = arch_facts(key)
    busy = min(dp, work.concurrency)  # replicas with work: one lockstep stream cannot use more
    flops = work.prompt_tokens * (1.0 - hit) * 2 * a.params_b * 1e9
    prefill_s = flops / (tp * busy * gpu.bf16_tflops * 1e12 * PREFILL_EFFICIENCY)
    step_bytes = (a.params_b * 1e9 * 2 + batch * work.mean_context * a.kv_bytes_per_token()) / tp
    step_s = step_bytes / (gpu.bandwidth_tbs * 1e12 * DECODE_EFFICIENCY)
    # the sequences in flight: B on each busy replica, but no more than the work has (6 runs on 5
    # replicas are 6 in flight, not 2 x 5)
    decode_s = work.completion_tokens / min(batch * busy, work.concurrency) * step_s
    return prefill_s / 3600, decode_s / 3600


def _rehearsal_per_step(path: Path | None) -> dict[str, float]:
    """Calls per decision step per model key from a rehearsal's ``rehearsal.json`` (or {})."""
    if path is None or not path.is_file():
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return {k: float(v) for k, v in doc.get("calls_per_step", {}).items()}


def engine_works(
    cfg: ReproConfig,
    registry: Registry,
    *,
    rehearsal: Path | None = None,
    reuse: Reuse | None = None,
    by_engine: bool = False,
) -> tuple[dict[str, Work], dict[str, str]]:
    """The work of each engine of ``cfg`` (module docstring) and the registry key it is timed
    with: per checkpoint (the entries of one set of weights summed, as one process starts them
    one after another) or, ``by_engine``, per registry key (one stage each)."""
    reg = registry
    per_step = _rehearsal_per_step(rehearsal)
    if reuse is None and rehearsal is not None and (rehearsal.parent / "engine").is_dir():
        reuse = measure_rehearsal(rehearsal.parent)
    works: dict[str, list[Work]] = {}
    keys: dict[str, str] = {}
    if cfg.kind == "moira":
        counted = moira_work(cfg.document, cfg.baselines, _paper_sessions(cfg))
        for b in cfg.document.get("backbones", []):
            key = b if isinstance(b, str) else b["key"]
            name = b if isinstance(b, str) else b.get("name", key)
            spec = reg.get(key)
            thinking = b.get("thinking") if isinstance(b, Mapping) else None
            thinking = spec.thinking_default if thinking is None else thinking
            work, _ = _moira_work(cfg, key, bool(thinking), per_step.get(key), reuse, counted.get(name))
            ckpt = key if by_engine else (spec.dirname or key)
            works.setdefault(ckpt, []).append(work)
            keys.setdefault(ckpt, key)
    else:
        assert cfg.qa is not None
        spec = reg.get(cfg.qa.model)
        ckpt = cfg.qa.model if by_engine else (spec.dirname or cfg.qa.model)
        works[ckpt] = [_qa_work(cfg, reuse)]
        keys = {ckpt: cfg.qa.model}
    merged = {}
    for ckpt, ws in works.items():
        merged[ckpt] = Work(
            sum(w.calls for w in ws),
            sum(w.prompt_tokens for w in ws),
            sum(w.completion_tokens for w in ws),
            max(w.concurrency for w in ws),
            max(w.mean_context for w in ws),
            " + ".join(dict.fromkeys(w.basis for w in ws))
            + (f"; {len(ws)} entries share this checkpoint" if len(ws) > 1 else ""),
            sum(w.hit * w.prompt_tokens for w in ws) / max(1, sum(w.prompt_tokens for w in ws)),
            max(w.final_context for w in ws),
            ws[0].reuse_basis,
            max(w.demand or w.concurrency for w in ws),
        )
    return merged, keys


def estimate(key: str, work: Work, pe: Any, gpu: GpuKind, registry: Registry) -> Engine:
    """The :class:`Engine` of registry key ``key`` doing ``work`` where ``pe`` (an
    :class:`~serving.hardware.placement.EnginePlacement`) puts it, on GPUs of kind ``gpu``."""
    spec = registry.get(key)
    if not pe.fits or pe.layout is None or not pe.layout.replicas:
        w1, _ = engine_memory(key, 1, 1, pe.need.max_model_len)
        why = f"{pe.note}; what would place it: {'; or '.join(pe.remedies)}" if pe.remedies else pe.note
        return Engine(key, 0, spec.tensor_parallel_size, 0, round(w1, 1), 0.0, 0.0, False, 0, work,
                      0.0, 0.0, why)  # fmt: skip
    tp, dp = pe.layout.tensor_parallel, len(pe.layout.replicas)
    free = pe.layout.replicas[0].share * gpu.memory_gib - OVERHEAD_GIB
    ctx = pe.need.max_model_len  # the engine's context ([model] max_model_len, else the registry's)
    w, kv1 = engine_memory(key, tp, 1, ctx)
    full_seqs = int((free - w) // kv1)
    batch = max(1, min(math.ceil(work.concurrency / dp), full_seqs))
    _, kv_full = engine_memory(key, tp, batch, ctx)
    _, kv_mean = engine_memory(key, tp, batch, work.mean_context)
    pre, dec = _time(key, tp, dp, batch, work, gpu)
    note = f"{full_seqs} full-context sequences fit per replica"
    # vLLM: paged KV at the actual context, max_num_seqs, prefix cache (module docstring)
    kv_tok = arch_facts(key).kv_bytes_per_token() / tp
    room_tokens = (free - w) * GIB / kv_tok
    fit = int(room_tokens // max(1, work.mean_context))
    demand = math.ceil((work.demand or work.concurrency) / dp)
    batch_v = max(1, min(demand, MAX_NUM_SEQS, fit))
    working = batch_v * max(work.final_context, work.mean_context)
    hit = work.hit * min(1.0, room_tokens / working) if working else work.hit
    pre_v, dec_v = _time(
        key, tp, dp, batch_v, replace(work, concurrency=work.demand or work.concurrency), gpu, hit
    )
    note_v = (
        f"{batch_v} sequence(s) in flight per replica (demand {demand}, "
        f"max_num_seqs {MAX_NUM_SEQS}, {fit} fit at the mean context {work.mean_context}); "
        f"prefix cache serves {hit:.0%} of prompt tokens ({work.reuse_basis}"
        + (
            f"; cut from {work.hit:.0%}: {working:,} tokens in flight exceed the cache's {room_tokens:,.0f}"
            if hit < work.hit
            else ""
        )
        + ")"
    )
    return Engine(
        key, tp, spec.tensor_parallel_size, dp, round(w, 1), round(kv_full, 1), round(kv_mean, 2), True,
        batch, work, pre, dec, note, batch_v, hit, pre_v, dec_v, note_v,
    )  # fmt: skip


def plan_config(
    cfg: ReproConfig,
    gpus: int,
    kind: str,
    *,
    registry: Registry,
    rehearsal: Path | None = None,
    reuse: Reuse | None = None,
    placement: Placement | None = None,
) -> list[Engine]:
    """The plan of ``cfg`` on ``gpus`` GPUs of ``kind`` (module docstring), on ``placement``
    (default: :func:`~agent.reproduce.engine_plan.place` on ``gpus`` GPUs of ``kind`` on one
    node). ``reuse``: the prefix shapes of the config's rehearsal (default: measured from the
    journals beside ``rehearsal``, ``<rehearsal folder>/engine``, where they are)."""
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise ConfigError(f"--gpus {gpus!r}; allowed: a whole number >= 1")
    gpu = gpu_kind(kind)
    reg = registry
    placed = placement or placing.place(cfg, declared_inventory(kind, gpus), registry=reg)
    works, keys = engine_works(cfg, reg, rehearsal=rehearsal, reuse=reuse)
    out = []
    for ckpt, work in works.items():
        key = keys[ckpt]
        if not any(e.key == key for e in placed.engines):
            continue  # served over HTTP: no engine of ours
        out.append(estimate(key, work, placed.find(key), gpu, reg))
    return out


def format_plan(
    cfg: ReproConfig,
    gpus: int,
    kind: str,
    engines: Sequence[Engine],
    placement: Placement | None = None,
    times_of: str = "",
) -> str:
    """The plan as text: the placement (where given), its basis, then each engine (``times_of``:
    a line saying what placement the engines' times are on, where it is not the one shown)."""
    gpu = gpu_kind(kind)
    lines = [format_placement(placement)] if placement is not None else []
    lines += [
        f"plan: {cfg.name} ({cfg.paper} {cfg.table}) on {gpus} x {gpu.label} "
        f"({gpu.memory_gb:g} GB, {gpu.bandwidth_tbs:g} TB/s, {gpu.bf16_tflops:g} bf16 TFLOP/s)",
        f"basis: bf16 weights; KV cache 2 x layers x KV heads x head dim x 2 B per token; prefill at "
        f"{PREFILL_EFFICIENCY:.0%} of peak compute, decode at {DECODE_EFFICIENCY:.0%} of peak bandwidth; "
        f"{OVERHEAD_GIB:g} GiB per GPU for activations (docs/reproduce.md); 'plain': no prefix-cache reuse, "
        "as many sequences in flight as fit at full context; 'vLLM': prefix cache and paged KV at actual "
        "context lengths, from the rehearsal's journals",
    ]
    if times_of:
        lines.append(f"engine times: {times_of}")
    total = total_v = 0.0
    for e in engines:
        if not e.fits:
            lines.append(f"engine {e.key}: {e.note}")
            continue
        total += e.hours
        total_v += e.hours_vllm
        lines += [
            f"engine {e.key}: tp {e.tp} x dp {e.dp} (replicas); per GPU "
            f"{e.weights_gib:g} GiB weights + {e.kv_full_gib:g} GiB KV at full context for {e.batch} "
            f"sequence(s) ({e.kv_mean_gib:g} GiB at the mean "
            f"context {e.work.mean_context}); {e.note}",
            f"  work: {e.work.calls:,} calls, {e.work.prompt_tokens / 1e6:,.1f} M prompt + "
            f"{e.work.completion_tokens / 1e6:,.1f} M completion tokens ({e.work.basis})",
            f"  time, plain: prefill {e.prefill_h:.2f} h + decode {e.decode_h:.2f} h = {e.hours:.2f} h",
            f"  time, vLLM: prefill {e.prefill_vllm_h:.2f} h + decode {e.decode_vllm_h:.2f} h = "
            f"{e.hours_vllm:.2f} h; {e.note_vllm}",
        ]
    lines.append(f"total (engines one after another): plain {total:.1f} h, vLLM {total_v:.1f} h")
    lines.append(
        f"budget: {total_v:.1f} h (vLLM: what vLLM 0.32 does by default, prefix caching on, paged KV); "
        f"{total:.1f} h (plain) is the ceiling with the prefix cache off or thrashing"
        if any(e.fits for e in engines)
        else "budget: nothing fits"
    )
    return "\n".join(lines)


def plan_dict(engines: Sequence[Engine]) -> list[dict[str, Any]]:
    return [{**asdict(e), "hours": round(e.hours, 3), "hours_vllm": round(e.hours_vllm, 3)} for e in engines]
