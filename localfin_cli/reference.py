"""The command-line reference (``docs/reference/cli.md``), generated from the typer app itself:
every command and group, its help (Markdown, as ``--help`` renders it), arguments and options
with their defaults (hidden commands and options, the deprecated aliases, are left out), shown
as ``--help`` shows them (:mod:`localfin_cli.help_format`).

typer carries its own copy of click, so the command tree is walked by its methods
(``list_commands``, ``get_command``, ``params``), not by click's classes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import typer

__all__ = ["commands", "render_markdown"]


def _is_group(cmd: Any) -> bool:
    return callable(getattr(cmd, "list_commands", None))


def commands(
    cmd: Any = None, path: tuple[str, ...] = (), parent: Any = None
) -> Iterator[tuple[str, Any, Any]]:
    """``(full command line, command, its context)`` of every command and group, depth first,
    by name."""
    if cmd is None:
        from localfin_cli.main import command

        cmd = command()
    ctx = typer.Context(cmd, parent=parent, info_name=path[-1] if path else "localfin")
    yield " ".join(("localfin", *path)), cmd, ctx
    if _is_group(cmd):
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not getattr(sub, "hidden", False):
                yield from commands(sub, (*path, name), ctx)


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _anchor(full: str) -> str:
    return full.replace(" ", "-")


def _param_rows(cmd: Any, ctx: Any) -> list[str]:
    rows = []
    for p in cmd.params:
        if getattr(p, "hidden", False) or p.name in ("install_completion", "show_completion"):
            continue
        kind = (p.display_type_rich(ctx) or "").strip("<>")
        if p.param_type_name == "argument":
            name = f"`{p.metavar or p.name.upper()}`"
        else:
            name = ", ".join(f"`{n}`" for n in [*p.opts, *p.secondary_opts])
            kind = "flag" if getattr(p, "is_flag", False) else kind
        default = None if callable(p.default) else p.default
        shown = "" if default in (None, (), [], False) else f"`{default}`"
        if not shown and isinstance(getattr(p, "show_default", None), str):
            shown = f"`{p.show_default}`"  # a default the command leaves to the code it calls
        if p.required:
            shown = "*required*"
        helptext = getattr(p, "help", "") or ""
        if getattr(p, "envvar", None):
            helptext += f" (environment variable: `{p.envvar}`)"
        rows.append(f"| {name} | {_cell(kind)} | {_cell(shown)} | {_cell(helptext)} |")
    return rows


def render_markdown() -> str:
    """The CLI reference page (Markdown)."""
    lines = [
        "# Command-line reference",
        "",
        "Every command of `localfin`, generated from the command-line program (`python -m "
        "localfin_cli.docs_pages` writes this page; a test keeps it current; `localfin COMMAND "
        "--help` shows the same). Exit codes: 0 success, 2 bad input or configuration (one "
        "`error: ...` line on stderr), 1 a failure at run time.",
        "",
    ]
    entries = list(commands())
    lines += [f"- [`{full}`](#{_anchor(full)})" for full, _, _ in entries[1:]]
    for full, cmd, ctx in entries:
        level = "#" * min(1 + full.count(" "), 4) if full != "localfin" else "##"
        lines += ["", f"{level} `{full}` {{#{_anchor(full)}}}", ""]
        usage = " ".join(cmd.collect_usage_pieces(ctx))
        lines += ["```text", f"{full} {usage}".rstrip(), "```", ""]
        if cmd.help:
            lines += [cmd.help.strip(), ""]
        if _is_group(cmd):
            subs = [(n, cmd.get_command(ctx, n)) for n in sorted(cmd.list_commands(ctx))]
            lines += ["| command | what it does |", "|---|---|"]
            lines += [
                f"| [`{n}`](#{_anchor(full)}-{n}) | {_cell(c.get_short_help_str(200))} |"
                for n, c in subs
                if c is not None and not getattr(c, "hidden", False)
            ]
            lines.append("")
        rows = _param_rows(cmd, ctx)
        if rows:
            lines += ["| argument / option | type | default | what it does |", "|---|---|---|---|", *rows, ""]
    return "\n".join(lines) + "\n"
