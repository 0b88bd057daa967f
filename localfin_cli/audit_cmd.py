"""`localfin audit RUN_OR_EXPERIMENT`: every model call of every run against the session it
decided at, from what the run recorded while it ran (:mod:`agent.pairs.experiment.audit`).
Exit 0: no violation; 1: at least one (each printed); 2: bad input (a folder written before
runs recorded provenance, no run folder)."""

from __future__ import annotations

from pathlib import Path

import typer

from localfin_cli._common import result

__all__ = ["register", "audit"]


def audit(
    path: Path = typer.Argument(..., help="A run folder, an experiment folder, or a folder above several."),
    as_json: bool = typer.Option(False, "--json", help="Print the audit as JSON."),
) -> int:
    """Check that no model call of a run saw a price, a news item or a screen window after the
    session it decided at (from the run's provenance.parquet); list every violation."""
    from agent.pairs.experiment.audit import audit_runs, to_json

    audits = audit_runs(path)
    violations = [v for a in audits for v in a.violations]
    if as_json:
        result(None, to_json(audits))
    else:
        lines = [a.summary() for a in audits] + [f"VIOLATION {v.line()}" for v in violations]
        calls = sum(a.model_calls for a in audits)
        lines.append(f"{len(audits)} runs, {calls} model calls audited, {len(violations)} violation(s)")
        result(None, "\n".join(lines))
    return 1 if violations else 0


def register(app: typer.Typer) -> None:
    """Attach ``localfin audit`` to ``app``."""
    app.command("audit")(audit)
