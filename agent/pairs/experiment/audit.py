"""``localfin audit RUN_OR_EXPERIMENT``: what every model call of a finished run saw, against the
session it decided at, from what the run recorded while it ran.

Each Moira and FinMem run folder holds ``provenance.parquet`` (:mod:`agent.pairs.market.provenance`):
per request, written when its payload was built, the decision session, the latest session of
every price series and the latest date of every news item in the payload, and for a pair
selection the screen's window end. The audit checks, per run:

* every model call the run made (Moira: each ``trace.parquet`` row with a request key; FinMem:
  each call of ``memory_trace.json``) has a provenance row with its request key, and, where the
  trace dates the call, one at that session;
* no provenance row's price or news date is after its decision session;
* every pair selection's screen window ends on or before the selection session (Moira's
  selection calls; FinMem's pair is the screen's top candidate at step 001, recorded on the row
  of its first test decision).

A run folder of a model-calling method without ``provenance.parquet`` was written before
provenance existed: an :class:`InputError` naming it (nothing can be proven about it; rerunning
it from a copy of its journal with ``--resume`` replays every call and writes provenance). Runs of
the rule baselines make no model call and are listed as such.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.market.folders import find_runs
from agent.pairs.market.provenance import PROVENANCE_FILE, read_provenance
from agent.pairs.market.records import read_json
from localfin.errors import DamagedFileError, InputError
from localfin.files import read_parquet

__all__ = ["Violation", "RunAudit", "audit_runs", "audit_run"]

_SELECTION = "pair_selection"


@dataclass(frozen=True)
class Violation:
    """One finding: the run, the call (type, step, request key), what is wrong."""

    run: str
    call_type: str
    step: int
    decision_date: str
    request_key: str
    what: str

    def line(self) -> str:
        key = self.request_key[:12] or "-"
        return f"{self.run}: {self.call_type} step {self.step} at {self.decision_date} [{key}]: {self.what}"


@dataclass
class RunAudit:
    """One run's audit: calls audited per call type, provenance rows read, violations."""

    run: str
    method: str
    calls: Counter = field(default_factory=Counter)
    rows: int = 0
    selections: int = 0
    violations: list[Violation] = field(default_factory=list)

    @property
    def model_calls(self) -> int:
        return sum(self.calls.values())

    def summary(self) -> str:
        if not self.rows and not self.model_calls:
            return f"{self.run} ({self.method}): no model calls"
        types = ", ".join(f"{k} {v}" for k, v in sorted(self.calls.items()))
        return (
            f"{self.run} ({self.method}): {self.model_calls} calls audited ({types}); "
            f"{self.selections} screen window(s) checked; {len(self.violations)} violation(s)"
        )


def _method(doc: dict[str, Any]) -> str:
    return str(doc.get("method") or doc.get("kind") or "")


def _calls(run_dir: Path, method: str) -> list[tuple[str, str, str]]:
    """(call type, request key, decision date or "") of every model call the run made."""
    if method == "moira":
        p = run_dir / "trace.parquet"
        if not p.is_file():
            raise InputError(f"{run_dir}: a Moira run without trace.parquet; allowed: a complete run folder")
        t = read_parquet(p, columns=["call_type", "request_key", "date"])
        t = t[t["request_key"] != ""]
        return list(zip(t["call_type"], t["request_key"], t["date"]))
    p = run_dir / "memory_trace.json"
    if not p.is_file():
        raise InputError(f"{run_dir}: a FinMem run without memory_trace.json; allowed: a complete run folder")
    return [(c["call_type"], c["request_key"], "") for c in read_json(p).get("calls", [])]


def _later(date: str, than: str) -> bool:
    return bool(date) and bool(than) and date > than


def audit_run(run_dir: str | Path, root: str | Path | None = None) -> RunAudit:
    """Audit one run folder (``root``: the folder its name is given relative to)."""
    d = Path(run_dir)
    name = d.relative_to(root).as_posix() if root is not None and d != Path(root) else d.name
    doc = read_json(d / "metrics.json")
    method = _method(doc)
    out = RunAudit(name, method)
    if method not in ("moira", "finmem"):
        return out
    prov_path = d / PROVENANCE_FILE
    if not prov_path.is_file():
        raise InputError(
            f"{d}: no {PROVENANCE_FILE}: the run was written before runs recorded what each call saw, so "
            "nothing can be audited; rerun it from its journal (copy config.toml and journal.sqlite into a "
            "new folder, then localfin pairs run --config NEW/config.toml --out NEW --resume: journaled "
            "calls replay)"
        )
    prov = read_provenance(prov_path)
    out.rows = len(prov)
    keys = set(prov["request_key"])
    dated = set(zip(prov["request_key"], prov["decision_date"]))
    for call_type, key, date in _calls(d, method):
        out.calls[call_type] += 1
        if key not in keys:
            out.violations.append(Violation(name, call_type, 0, date, key, "no provenance row for this call"))
        elif date and (key, date) not in dated:
            out.violations.append(
                Violation(name, call_type, 0, date, key, "provenance records another decision session")
            )
    for r in prov.itertuples(index=False):

        def add(what: str, r: Any = r) -> None:
            out.violations.append(
                Violation(name, r.call_type, int(r.step), r.decision_date, r.request_key, what)
            )

        if _later(r.price_max_date, r.decision_date):
            add(f"price data of {r.price_max_date}, after the decision session")
        if _later(r.news_max_date, r.decision_date):
            add(f"news dated {r.news_max_date}, after the decision session")
        if r.call_type == _SELECTION and not r.screen_end:
            add("a selection without its screen's window end")
        if r.screen_end:
            out.selections += 1
            if _later(r.screen_end, r.decision_date):
                add(f"screen window ends {r.screen_end}, after the selection session")
    return out


def audit_runs(path: str | Path, *, skip_damaged: bool = False) -> list[RunAudit]:
    """Audit every run folder at or below ``path`` (a run, an experiment, a matrix).
    ``skip_damaged``: leave out a run with a torn file (:mod:`agent.pairs.experiment.integrity`
    reports it) instead of raising its DamagedFileError."""
    root = Path(path)
    if not root.exists():
        raise InputError(f"PATH={root} does not exist; allowed: a run, experiment or matrix folder")
    runs = find_runs(root)
    if not runs:
        raise InputError(
            f"PATH={root} holds no run folder (metrics.json + steps.parquet); "
            "allowed: a run, experiment or matrix folder"
        )
    out = []
    for d in runs:
        try:
            out.append(audit_run(d, root))
        except DamagedFileError:
            if not skip_damaged:
                raise
    return out


def to_json(audits: list[RunAudit]) -> str:
    """The audits as JSON (summary per run, every violation)."""
    return json.dumps(
        [
            {
                "run": a.run,
                "method": a.method,
                "calls": dict(a.calls),
                "provenance_rows": a.rows,
                "screen_windows": a.selections,
                "violations": [v.__dict__ for v in a.violations],
            }
            for a in audits
        ],
        indent=2,
    )
