"""`localfin plugins list`: the installed plugins (entry points in localfin's groups), each with
its kind, the distribution that declares it and its version, and whether localfin accepts it."""

from __future__ import annotations

import typer

from localfin_cli._common import result

__all__ = ["app"]

app = typer.Typer(help="Installed plugins: what they add and where it comes from.", no_args_is_help=True)

#: the kinds a plugin can add (entry-point group localfin.KIND)
KINDS = ("models", "backends", "baselines", "qa_datasets", "tools")


def _installed(kinds: tuple[str, ...]) -> list:
    """Every installed entry point of ``kinds``, checked by the registry that would use it."""
    from agent.pairs.baselines.plugins import BASELINES
    from agent.qa.data.extensions import DATASETS_REGISTRY, TOOLS_REGISTRY
    from localfin.plugins import review
    from serving.open import BACKENDS

    registries = {
        "backends": BACKENDS,
        "baselines": BASELINES,
        "qa_datasets": DATASETS_REGISTRY,
        "tools": TOOLS_REGISTRY,
    }
    rows = []
    for kind in kinds:
        reg = registries.get(kind)
        rows += reg.review() if reg is not None else review(f"localfin.{kind}")
    return rows


@app.command("list")
def list_plugins(
    kind: str | None = typer.Option(
        None, "--kind", help="Only this kind: models, backends, baselines, qa_datasets or tools."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object per entry point."),
) -> int:
    """Show every installed plugin entry point: its name (what configs and commands use), its
    kind, the distribution that declares it and its version, and whether it loads. Exit 1 when
    one is refused (the reason is shown)."""
    import json
    from dataclasses import asdict

    from localfin.errors import ConfigError

    if kind is not None and kind not in KINDS:
        raise ConfigError(f"--kind {kind!r}; allowed: {', '.join(KINDS)}")
    rows = _installed((kind,) if kind else KINDS)
    if as_json:
        if rows:
            result(None, "\n".join(json.dumps(asdict(r)) for r in rows))
    elif not rows:
        what = f"{kind} " if kind else ""
        result(None, f"no {what}plugins installed (docs/extending.md says how to write and install one)")
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table("name", "kind", "distribution", "version", "entry point", "status")
        for r in rows:
            table.add_row(r.name, r.kind, r.dist, r.version, r.target, r.problem or "ok")
        Console(width=200).print(table)
    return 1 if any(r.problem for r in rows) else 0
