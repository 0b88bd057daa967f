"""`localfin reproduce list`: every shipped config, the table it reproduces, its models and what it
shows, fitted to the terminal's width (one line per config in a pipe, for grep)."""

from __future__ import annotations

__all__ = ["table", "terminal_width"]


def terminal_width() -> int | None:
    """The terminal's width in columns (``COLUMNS`` first); None when the output is not a terminal
    and ``COLUMNS`` is unset (a pipe keeps one line per config, for grep)."""
    import os
    import shutil
    import sys

    if not os.environ.get("COLUMNS") and not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size((100, 24)).columns


def table(width: int | None = None) -> str:
    """Every shipped config: one line each in columns, the last one (what it reproduces) wrapped
    to ``width``; where the columns leave it less than 40 characters, one block per config
    (its name and table, then its models and what, each wrapped)."""
    import textwrap

    from agent.reproduce.spec import load_all

    rows = [(c.name, f"{c.paper} {c.table}", ", ".join(c.model_keys), c.title) for c in load_all()]
    w = [max(len(r[i]) for r in rows) for i in range(3)]
    prefix = w[0] + w[1] + w[2] + 6
    if width is None or width - prefix >= 40:
        lines = [f"{'config':<{w[0]}}  {'reproduces':<{w[1]}}  {'models':<{w[2]}}  what"]
        for a, b, c, d in rows:
            what = textwrap.wrap(d, width - prefix) if width is not None else [d]
            lines.append(f"{a:<{w[0]}}  {b:<{w[1]}}  {c:<{w[2]}}  {what[0]}")
            lines += [" " * prefix + more for more in what[1:]]
        return "\n".join(lines)
    blocks = []
    for a, b, c, d in rows:
        wrap = textwrap.TextWrapper(width=max(width, 30), initial_indent="    ", subsequent_indent="      ")
        blocks.append("\n".join([f"{a} ({b})", *wrap.wrap(f"models: {c}"), *wrap.wrap(d)]))
    return "\n".join(blocks)
