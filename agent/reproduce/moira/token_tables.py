"""The Moira paper's token tables (Appendix D.2) computed as the paper computes them, from what
a Moira reproduction run wrote (each cell's ``summary.json`` and its runs' ``trace.parquet``).

- **Table 9**: per call type of the agent, the input (prompt), output (completion) and total
  tokens of one call, each as a range over the calls, taken on its own ("ranges are reported
  independently"), training and test.
- **Table 10**: chat tokens (prompt + completion, reasoning included, as the engine counts them
  with the backbone's own tokenizer; FinMem's embeddings are not chat tokens and are not
  counted) of Moira's training + full test, its full test, and a 23-step cycle (its test total
  divided by the finalized test steps, times 23); FinMem's full test and its cycle estimate (the
  mean of its first complete 23-step cycles of the test, the remaining steps left out:
  :func:`agent.report.usage.finmem_tokens_per_cycle`); and the Moira / FinMem ratios, beside the
  paper's (1,762,999 tokens for GPT-4.1-mini's A1 training + test; about one quarter of FinMem's
  chat tokens over the full test).

Moira's run is the first ``full`` run of a cell (its first seed and exposure); FinMem's is the
FinMem run of the same exposure and seed when there is one, else the cell's first FinMem run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent.report.usage import VALIDATION_PERIOD, call_ranges, finmem_tokens_per_cycle

__all__ = [
    "PAPER_MOIRA_A1_TOKENS",
    "PAPER_RATIO",
    "TABLE9",
    "TABLE10",
    "table9_rows",
    "table10_rows",
    "token_tables",
]

#: Table 10: Moira's GPT-4.1-mini chat tokens over the A1 training and the 303-step test.
PAPER_MOIRA_A1_TOKENS = 1_762_999
#: D.2: "Moira uses approximately one quarter of FinMem's chat tokens" over the full test.
PAPER_RATIO = 0.25
TABLE9 = (
    "Table 9 as the paper computes it: tokens of one call per call type (min..max, each range on its own)"
)
TABLE10 = (
    "Table 10 as the paper computes it: chat tokens (prompt + completion, the backbone's own tokenizer "
    "through the engine's counts; no embedding tokens) of Moira and FinMem"
)


def _chat(by_type: Mapping[str, Any]) -> int:
    return int(
        sum(int(v.get("prompt_tokens", 0)) + int(v.get("completion_tokens", 0)) for v in by_type.values())
    )


def _rng(r: tuple[int, int]) -> str:
    return f"{r[0]}..{r[1]}"


def _summary(cell: Path) -> dict[str, Any] | None:
    p = cell / "summary.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else None


def _moira_run(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((r for r in doc.get("runs", []) if r["run_id"].startswith("full-")), None)


def _finmem_run(doc: Mapping[str, Any], moira_id: str) -> Mapping[str, Any] | None:
    fms = [b for b in doc.get("baselines", []) if str(b.get("run_id", "")).startswith("finmem-")]
    if not fms:
        return None
    _v, exposure, seed = moira_id.rsplit("-", 2)
    want = f"finmem-{exposure}-seed{seed.removeprefix('s')}"
    return next((b for b in fms if b["run_id"] == want), fms[0])


def table9_rows(cells: Sequence[Path]) -> list[dict[str, Any]]:
    """Table 9 (module docstring), one row per cell and agent call type."""
    from agent.pairs.moira.trace import read_trace

    rows = []
    for cell in cells:
        doc = _summary(cell)
        run = _moira_run(doc) if doc else None
        trace_path = cell / "runs" / run["run_id"] / "trace.parquet" if run else None
        if run is None or trace_path is None or not trace_path.is_file():
            continue
        for ct, r in call_ranges(read_trace(trace_path)).items():
            rows.append(
                {
                    "backbone": cell.parent.name,
                    "windows": cell.name,
                    "run": run["run_id"],
                    "call_type": ct,
                    "calls": r.calls,
                    "input_tokens": _rng(r.input),
                    "output_tokens": _rng(r.output),
                    "total_tokens": _rng(r.total),
                }
            )
    return rows


def table10_rows(cells: Sequence[Path]) -> list[dict[str, Any]]:
    """Table 10 (module docstring), one row per cell with a Moira run."""
    rows = []
    for cell in cells:
        doc = _summary(cell)
        run = _moira_run(doc) if doc else None
        if run is None:
            continue
        e = run.get("extra", {})
        steps = int(run.get("metrics", {}).get("n_transitions", 0))
        test = _chat((e.get("test") or {}).get("tokens_by_call_type") or {})
        train = _chat((e.get("train") or {}).get("tokens_by_call_type") or {})
        cycle_m = test / steps * VALIDATION_PERIOD if steps else None
        row: dict[str, Any] = {
            "backbone": cell.parent.name,
            "windows": cell.name,
            "moira_run": run["run_id"],
            "finalized_test_steps": steps,
            "moira_training_plus_test": train + test,
            "moira_test": test,
            "moira_per_cycle": None if cycle_m is None else round(cycle_m),
        }
        fm = _finmem_run(doc, run["run_id"]) if doc else None
        if fm is not None:
            fe = fm.get("extra", {})
            fm_test = _chat((fe.get("tokens_by_phase") or {}).get("test") or {})
            fm_steps = int(fm.get("metrics", {}).get("n_transitions", steps))
            cycle, n = finmem_tokens_per_cycle(fe, fm_steps)
            model = (fe.get("config") or {}).get("model", "")
            row |= {
                "finmem_run": fm["run_id"],
                "finmem_model": model,
                "finmem_test": fm_test,
                "finmem_per_cycle": None if cycle is None else round(cycle),
                "finmem_cycles_averaged": n,
                "ratio_full_test": round(test / fm_test, 3) if fm_test else None,
                "ratio_per_cycle": round(cycle_m / cycle, 3) if cycle and cycle_m is not None else None,
            }
        row |= {
            "paper_moira_a1_training_plus_test": PAPER_MOIRA_A1_TOKENS,
            "paper_ratio_full_test": PAPER_RATIO,
        }
        rows.append(row)
    return rows


def token_tables(cells: Sequence[Path]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Tables 9 and 10 of a Moira reproduction's cells (empty tables left out)."""
    return [(t, rows) for t, rows in ((TABLE9, table9_rows(cells)), (TABLE10, table10_rows(cells))) if rows]
