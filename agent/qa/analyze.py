"""Reading QA run folders back: the variant table (accuracy, tokens, latency, memory hit rate),
accuracy against bank size and k_max, tokens with and without memory, and the bank's
retrieval analytics (FinAcumen Appendix E: H_n, E_n, adjacent-snapshot Jaccard J and change
fraction C at tau 0.65, and a tau sweep) for a set of evaluation questions.

Everything here is computed from files the evaluations wrote (``scores.json``,
``manifest.json``) and from the bank; nothing calls a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agent.qa import runs
from agent.qa.items import Question
from bank.analytics import similarity_matrix, snapshot_table, tau_sweep
from bank.embedder import Embedder
from bank.schema import CONTEXT_CHARS, query_text
from bank.store import ExperienceBank
from localfin.errors import InputError

__all__ = ["DEFAULT_TAUS", "run_rows", "bank_analytics", "analyze", "markdown_table"]

DEFAULT_TAUS = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9)  # the paper's sweep (Fig. 3a)

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
) -> dict[str, Any]:
    """H/E/J/C of ``questions`` against bank snapshots (prefixes in insertion order).

    ``sizes``: snapshot sizes (default: ten even steps up to the bank size); ``k_max=None``
    counts every entry above tau, as the paper's Appendix E does.
    """
    n = len(bank)
    if n == 0 or not questions:
        return {"bank_rows": n, "queries": len(questions), "snapshots": [], "tau_sweep": []}
    if sizes is None:
        step = max(1, n // 10)
        sizes = sorted({*range(0, n + 1, step), n})
    q = embedder.embed([query_text(x.text, x.context, context_chars) for x in questions])
    sims = similarity_matrix(q, bank.vectors())
    sources = list(bank.sources)
    snaps = snapshot_table(sims, sources, sizes, tau, k_max)
    sweep = tau_sweep(sims, sources, sizes, taus, k_max)
    return {
        "bank_rows": n,
        "queries": len(questions),
        "tau": tau,
        "k_max": k_max,
        "snapshots": [asdict(r) for r in snaps],
        "tau_sweep": [asdict(r) for r in sweep],
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


def analyze(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    bank: ExperienceBank | None = None,
    embedder: Embedder | None = None,
    questions: Sequence[Question] = (),
    sizes: Sequence[int] | None = None,
    taus: Sequence[float] = DEFAULT_TAUS,
) -> Path:
    """Write ``analysis.json`` and ``analysis.md`` in ``out_dir``; returns the Markdown path."""
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
        cols = (
            ("bank_limit", "bank n"),
            ("k_max", "k_max"),
            ("accuracy", "accuracy"),
            ("memory_hit_rate", "hit rate"),
            ("mean_total_tokens", "tokens/q"),
        )
        lines += ["", "## Accuracy against bank size and k_max (Base+FT+FM)", "", markdown_table(sweep, cols)]
        result["memory_sweep"] = sweep
    if bank is not None and embedder is not None and questions:
        ana = bank_analytics(bank, embedder, questions, sizes=sizes, taus=taus)
        result["bank_analytics"] = ana
        cols = (
            ("n", "bank n"),
            ("hit_rate", "H_n"),
            ("mean_entries", "E_n"),
            ("jaccard_prev", "J (prev)"),
            ("change_prev", "C (prev)"),
        )
        lines += [
            "",
            f"## Retrieval over bank snapshots (tau {ana['tau']}, {ana['queries']} queries, "
            "every entry above tau)",
            "",
            markdown_table(ana["snapshots"], cols),
        ]
        last = ana["snapshots"][-1]["n"] if ana["snapshots"] else 0
        at_full = [r for r in ana["tau_sweep"] if r["n"] == last]
        lines += [
            "",
            f"## Hit rate against tau (bank n = {last})",
            "",
            markdown_table(at_full, (("tau", "tau"), ("hit_rate", "H_n"), ("mean_entries", "E_n"))),
        ]
    runs.write_json(out / "analysis.json", result)
    md = out / "analysis.md"
    md.parent.mkdir(parents=True, exist_ok=True)
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return md
