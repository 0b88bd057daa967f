"""What the solver's limits cut in finished runs, per call type (for run and rehearsal reports).

Read from the run folders a run wrote: each trajectory's steps carry their cut labels
(:data:`agent.qa.core.trajectory.CUTS`), counted under the call type of the step (``qa_base`` for the
Base step, ``qa_annotate`` for the annotator, ``qa_solve`` for plans and actions); the calls that
leave no step (``bank_summarize``, ``judge``) count their replies cut at ``max_tokens`` from the
journals (``reply``). Every call type that ran appears, with zero counts when nothing was cut.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

from agent.qa.core import runs

__all__ = ["cuts_by_call_type"]

_STEP_CALL = {"base": "qa_base", "annotate": "qa_annotate"}
_FROM_JOURNAL = ("bank_summarize", "judge")


def _trace_rows(run: Path) -> Iterable[dict]:
    path = run / runs.TRACE
    if not path.is_file():
        return []
    rows = runs.read_jsonl(path)
    out = []
    for r in rows:
        if "trajectories" in r:  # a bank build: the item's K trajectories
            out += list(r["trajectories"])
        elif "steps" in r:
            out.append(r)
    return out


def _journal_counts(path: Path) -> dict[str, tuple[int, int]]:
    """call type -> (calls, replies cut at max_tokens) of one journal."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        cols = {r[1] for r in con.execute("PRAGMA table_info(calls)")}
        if not {"call_type", "finish_reason"} <= cols:
            return {}
        out: dict[str, tuple[int, int]] = {}
        for call, finish in con.execute("SELECT call_type, finish_reason FROM calls"):
            n, cut = out.get(call, (0, 0))
            out[call] = (n + 1, cut + (finish == "length"))
        return out


def cuts_by_call_type(run_dirs: Iterable[Path]) -> dict[str, dict[str, int]]:
    """call type -> cut label -> count, over the runs under each of ``run_dirs`` (module doc)."""
    out: dict[str, dict[str, int]] = {}
    seen: set[Path] = set()
    for root in run_dirs:
        for trace in sorted(Path(root).rglob(runs.TRACE)):
            run = trace.parent
            if run in seen:
                continue
            seen.add(run)
            for traj in _trace_rows(run):
                for step in traj.get("steps", []):
                    call = _STEP_CALL.get(step.get("kind", ""), "qa_solve")
                    row = out.setdefault(call, {})
                    for c in step.get("cuts", []):
                        row[c] = row.get(c, 0) + 1
        for journal in sorted(Path(root).rglob("*.sqlite")):
            for call, (_, cut) in _journal_counts(journal).items():
                row = out.setdefault(call, {})
                if call in _FROM_JOURNAL and cut:
                    row["reply"] = row.get("reply", 0) + cut
    return dict(sorted(out.items()))
