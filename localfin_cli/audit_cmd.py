"""`localfin audit RUN_OR_EXPERIMENT`: first whether every file of the folder is whole and its
own (:mod:`agent.pairs.experiment.integrity`: torn journals, Parquet and JSON files, manifests
of another config), then every model call of every run against the session it decided at, from
what the run recorded while it ran (:mod:`agent.pairs.experiment.audit`). Exit 0: nothing
found; 1: at least one violation (each printed); 2: bad input (a folder written before runs
recorded provenance, no run folder); 6: a damaged file (each printed; its run is not audited)."""

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
    from agent.pairs.experiment.integrity import check_tree
    from agent.pairs.market.folders import find_runs
    from localfin.errors import DamagedFileError

    damaged = check_tree(path) if path.is_dir() else []
    if damaged and not find_runs(path):
        audits = []  # e.g. a QA run folder: its files are what can be checked
    else:
        audits = audit_runs(path, skip_damaged=bool(damaged))
    violations = [v for a in audits for v in a.violations]
    if as_json:
        result(None, to_json(audits))
    else:
        lines = [f"DAMAGED {d.line()}" for d in damaged]
        lines += [a.summary() for a in audits] + [f"VIOLATION {v.line()}" for v in violations]
        calls = sum(a.model_calls for a in audits)
        lines.append(
            f"{len(audits)} runs, {calls} model calls audited, {len(violations)} violation(s)"
            + (f", {len(damaged)} damaged file(s)" if damaged else "")
        )
        result(None, "\n".join(lines))
    if damaged:
        raise DamagedFileError(
            f"{len(damaged)} damaged file(s) under {path}, first {damaged[0].line()}; restore or move "
            "them away, then rerun the run with --resume (journaled calls replay)"
        )
    return 1 if violations else 0


def register(app: typer.Typer) -> None:
    """Attach ``localfin audit`` to ``app``."""
    app.command("audit")(audit)
