"""Reading QA run folders back: the variant table (accuracy, tokens, latency, memory hit rate),
accuracy against bank size and k_max, tokens with and without memory, and the bank's
retrieval analytics (FinAcumen Appendix E: H_n, E_n, adjacent-snapshot Jaccard J and change
fraction C at tau 0.65, and a tau sweep) for a set of evaluation questions.

Everything here is computed from files the evaluations wrote (``scores.json``,
``manifest.json``, ``trace.jsonl``) and from the bank; nothing calls a model. The memory sweep
carries bootstrap 95 % intervals (:mod:`agent.qa.analysis.intervals`); the retrieval analytics take the
paper's stratified snapshots and give rows per question set and pooled (Table 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from agent.qa.analysis.intervals import EvalRun, run_intervals
from agent.qa.core import runs
from agent.qa.core.items import Question
from bank.analytics import similarity_matrix, snapshot_table, tau_sweep
from bank.embedder import Embedder
from bank.schema import CONTEXT_CHARS, query_text
from bank.snapshots import SNAPSHOT_SEED, snapshot_order
from bank.store import ExperienceBank
from localfin.errors import InputError

__all__ = ["DEFAULT_TAUS", "GLOBAL", "run_rows", "bank_analytics", "analyze", "markdown_table"]

DEFAULT_TAUS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)  # the paper's sweep (Fig. 3a)
GLOBAL = "Global"  # the label of the rows over all questions pooled (Table 5's last row)

_COLUMNS = (
    ("run", "run"),
    ("variant", "variant"),
    ("n", "n"),
    ("accuracy", "accuracy"),
    ("mean_score", "score"),
    ("bank_limit", "bank n"),
    ("k_max", "k_max"),
    ("memory_hit_rate", "hit rate"),
    ("mean_total_tokens", "tokens/q"),
    ("mean_tokens_with_memory", "tokens/q (memory)"),
    ("mean_tokens_without_memory", "tokens/q (no memory)"),
    ("mean_engine_s", "engine s/q"),
    ("run_wall_s", "wall s"),
    ("mean_tool_steps", "tool steps/q"),
    ("gate_pass_rate", "gate pass"),
)


def run_rows(run_dirs: Sequence[str | Path]) -> list[dict[str, Any]]:
    """One row per evaluation folder (its ``scores.json`` plus model and items from the manifest)."""
    rows = []
    for d in run_dirs:
        d = Path(d)
        scores = runs.read_json(d / runs.SCORES)
        if "variant" not in scores:
            raise InputError(f"{d} is not an evaluation run folder (its scores.json has no variant)")
        man = runs.read_json(d / runs.MANIFEST)
        rows.append({"run": d.name, "model": man.get("model", ""), **scores})
    return rows


def bank_analytics(
    bank: ExperienceBank,
    embedder: Embedder,
    questions: Sequence[Question],
    *,
    sizes: Sequence[int] | None = None,
    taus: Sequence[float] = DEFAULT_TAUS,
    tau: float = 0.65,
    k_max: int | None = None,
    context_chars: int = CONTEXT_CHARS,
    groups: Sequence[str] | None = None,
    order: str = "stratified",
    seed: int = SNAPSHOT_SEED,
) -> dict[str, Any]:
    """H/E/J/C of ``questions`` against bank snapshots, globally and per group (Table 5).

    Snapshots are the first n entries of ``order`` (:mod:`bank.snapshots`: the paper's
    stratified order, seed 42, by default); ``sizes``: snapshot sizes (default: ten even steps
    up to the bank size); ``k_max=None`` counts every entry above tau, as the paper's Appendix E
    does. ``groups`` names each question's set (default: its dataset): ``by_set`` holds each
    set's rows at ``tau``, ``snapshots`` the rows of all questions pooled (the paper's Global
    row is over all queries), ``tau_sweep`` the pooled rows for every tau. The embedder, its
    dimension, the order and the bank's entries per source set are recorded with the rows.
    """
    n = len(bank)
    labels = list(groups) if groups is not None else [q.dataset for q in questions]
    if len(labels) != len(questions):
        raise InputError(f"groups has {len(labels)} labels for {len(questions)} questions")
    mix: dict[str, int] = {}
    for d in bank.datasets():
        mix[d] = mix.get(d, 0) + 1
    info: dict[str, Any] = {
        "bank_rows": n,
        "queries": len(questions),
        "tau": tau,
        "k_max": k_max,
        "order": order,
        "seed": seed,
        "embedder": embedder.model_id,
        "embedder_dim": embedder.dim,
        "bank_by_source": dict(sorted(mix.items())),
        "queries_by_set": {g: labels.count(g) for g in dict.fromkeys(labels)},
    }
    if n == 0 or not questions:
        return {**info, "snapshots": [], "by_set": {}, "tau_sweep": []}
    if sizes is None:
        step = max(1, n // 10)
        sizes = sorted({*range(0, n + 1, step), n})
    q = embedder.embed([query_text(x.text, x.context, context_chars) for x in questions])
    sims = similarity_matrix(q, bank.vectors())
    sources = list(bank.sources)
    perm = snapshot_order(bank.datasets(), order, seed)
    snaps = snapshot_table(sims, sources, sizes, tau, k_max, perm)
    by_set = {}
    for g in dict.fromkeys(labels):
        rows = np.asarray([i for i, lab in enumerate(labels) if lab == g])
        table = snapshot_table(sims[rows], sources, sizes, tau, k_max, perm)
        by_set[g] = [{"set": g, **asdict(r)} for r in table]
    sweep = tau_sweep(sims, sources, sizes, taus, k_max, perm)
    return {
        **info,
        "snapshots": [{"set": GLOBAL, **asdict(r)} for r in snaps],
        "by_set": by_set,
        "tau_sweep": [{"set": GLOBAL, **asdict(r)} for r in sweep],
    }


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A Markdown table of ``rows`` with ``(key, header)`` columns."""
    head = "| " + " | ".join(h for _, h in columns) + " |"
    rule = "|" + "|".join("---" for _ in columns) + "|"
    body = ["| " + " | ".join(_fmt(r.get(k)) for k, _ in columns) + " |" for r in rows]
    return "\n".join([head, rule, *body])


def _sweep_intervals(sweep: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Bootstrap 95 % intervals (percent) onto the sweep rows, in place; returns the paired
    differences (consecutive k_max, consecutive bank sizes). Runs over the same items form one
    set (their manifests list the items)."""
    groups: dict[tuple[str, ...], str] = {}
    evals = []
    for r in sweep:
        d = Path(r["run_dir"])
        items = tuple(runs.read_json(d / runs.MANIFEST).get("items", []))
        label = groups.setdefault(items, f"set {len(groups) + 1}" if groups else "set 1")
        evals.append(EvalRun(label, "ft_fm", r.get("k_max"), r.get("bank_limit"), d))
    rep = run_intervals(evals)
    for r, e in zip(sweep, evals):
        iv = rep.per_run[str(e.run_dir)]
        r["ci95"] = f"[{100 * iv.low:.1f}, {100 * iv.high:.1f}]"
        r["ci95_low"], r["ci95_high"] = iv.low, iv.high
    return [d for d in rep.differences if d["set"] != "macro"]


def analyze(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    bank: ExperienceBank | None = None,
    embedder: Embedder | None = None,
    questions: Sequence[Question] = (),
    sizes: Sequence[int] | None = None,
    taus: Sequence[float] = DEFAULT_TAUS,
    groups: Sequence[str] | None = None,
) -> Path:
    """Write ``analysis.json`` and ``analysis.md`` in ``out_dir``; returns the Markdown path.

    The Base+FT+FM runs of a bank-size x k_max sweep get bootstrap 95 % intervals of their
    accuracy and of the paired differences between neighbouring grid points
    (:mod:`agent.qa.analysis.intervals`); with a bank, the retrieval analytics of ``questions`` (per
    ``groups`` label and pooled, :func:`bank_analytics`) follow, headed by the embedder, its
    dimension, tau and the snapshot order."""
    out = Path(out_dir)
    rows = run_rows(run_dirs)
    result: dict[str, Any] = {"runs": rows}
    lines = ["# FinAcumen evaluation analysis", "", "## Variants", "", markdown_table(rows, _COLUMNS)]
    sweep = [
        r for r in rows if r["variant"] == "ft_fm" and (r.get("bank_limit") is not None or r.get("k_max"))
    ]
    if len(sweep) > 1:
        sweep.sort(
            key=lambda r: (r.get("k_max") or 0, -1 if r.get("bank_limit") is None else r["bank_limit"])
        )
        diffs = _sweep_intervals(sweep)
        cols = (
            ("bank_limit", "bank n"),
            ("k_max", "k_max"),
            ("accuracy", "accuracy"),
            ("ci95", "95 % CI (%)"),
            ("memory_hit_rate", "hit rate"),
            ("mean_total_tokens", "tokens/q"),
        )
        lines += ["", "## Accuracy against bank size and k_max (Base+FT+FM)", "", markdown_table(sweep, cols)]
        lines += [
            "",
            "Intervals: percentile bootstrap over questions (10,000 resamples, seed 0); differences are "
            "paired (the same draws for both runs).",
        ]
        if diffs:
            dcols = (
                ("set", "set"),
                ("comparison", "comparison"),
                ("diff_pts", "difference (points)"),
                ("ci95_low", "95 % CI low"),
                ("ci95_high", "95 % CI high"),
                ("zero_inside", "0 inside"),
            )
            lines += ["", "## Paired differences (points)", "", markdown_table(diffs, dcols)]
        result["memory_sweep"] = sweep
        result["memory_sweep_differences"] = diffs
    if bank is not None and embedder is not None and questions:
        ana = bank_analytics(bank, embedder, questions, sizes=sizes, taus=taus, groups=groups)
        result["bank_analytics"] = ana
        cols = (
            ("set", "set"),
            ("n", "bank n"),
            ("hit_rate", "H_n"),
            ("mean_entries", "E_n"),
            ("jaccard_prev", "J (prev)"),
            ("change_prev", "C (prev)"),
        )
        mix = ", ".join(f"{k} {v}" for k, v in ana["bank_by_source"].items())
        lines += [
            "",
            f"## Retrieval over bank snapshots (tau {ana['tau']}, {ana['queries']} queries, "
            "every entry above tau)",
            "",
            f"Embedder {ana['embedder']} ({ana['embedder_dim']}-d); snapshots: the first n entries of the "
            f"{ana['order']} order (seed {ana['seed']}); bank {ana['bank_rows']} entries ({mix}).",
        ]
        for label, srows in ana["by_set"].items():
            lines += [
                "",
                f"### {label} ({ana['queries_by_set'][label]} queries)",
                "",
                markdown_table(srows, cols),
            ]
        lines += ["", f"### {GLOBAL} (all queries)", "", markdown_table(ana["snapshots"], cols)]
        last = ana["snapshots"][-1]["n"] if ana["snapshots"] else 0
        at_full = [r for r in ana["tau_sweep"] if r["n"] == last]
        lines += [
            "",
            f"## Hit rate against tau (bank n = {last}, all queries)",
            "",
            markdown_table(at_full, (("tau", "tau"), ("hit_rate", "H_n"), ("mean_entries", "E_n"))),
        ]
    runs.write_json(out / "analysis.json", result)
    md = out / "analysis.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md
