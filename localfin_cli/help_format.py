"""How every command shows itself in ``--help`` and on the command-line reference page.

- Help texts are Markdown (:data:`MARKUP`), as the reference page renders them: a word in
  square brackets, such as a TOML table name (``[model]``) or an interval (``[low, high]``), is
  shown as written; with typer's default, rich markup, it is taken for a style tag and vanishes.
- A plain flag (``--json``) shows no value type; a repeatable option shows the type of one
  value (``<path>``, not ``<list[Path]>``).
- Arguments read as in any Unix usage line: ``PATH`` when required, ``[KEY]`` when optional,
  ``RUN_DIR...`` when repeated (typer's own usage reads ``{path}``).

:func:`tidy` applies the last two to a command tree built from the typer app; commands built
later (the benchmarks', on first use) call it on themselves.
"""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperArgument

__all__ = ["MARKUP", "PlainArgument", "tidy"]

#: the markup of every help text (typer's ``rich_markup_mode``)
MARKUP = "markdown"

_LIST = re.compile(r"^<list\[(?P<one>.+)\]>$")


class PlainArgument(TyperArgument):
    """A typer argument shown as Unix usage lines show one (its metavar, when given, as written)."""

    @property
    def display_name_raw(self) -> str:
        return self.metavar or self.name.upper()

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        if name.startswith("["):  # a metavar written as the usage line shows it
            return name
        if self.nargs != 1 and not name.endswith("..."):
            name += "..."
        return name if self.required else f"[{name}]"

    def display_type_rich(self, ctx: Any) -> str | None:
        return _one_value(self.display_type(ctx))


def _one_value(shown: str) -> str:
    m = _LIST.match(shown)
    return f"<{m['one'].lower()}>" if m else shown


def tidy(cmd: Any) -> Any:
    """``cmd`` and every subcommand already built, shown as the module docstring says; returns
    ``cmd``."""
    help_option = cmd.get_help_option(typer.Context(cmd))  # made once, on first use
    for param in [*getattr(cmd, "params", []), *([help_option] if help_option else [])]:
        if isinstance(param, TyperArgument):
            param.__class__ = PlainArgument
        elif param.metavar is None and getattr(param, "is_flag", False):
            param.metavar = ""  # typer shows a value type (<bool>) where there is no value
        elif param.metavar is None and getattr(param, "multiple", False):
            param.metavar = _one_value(param.display_type(typer.Context(cmd)))
    for sub in getattr(cmd, "commands", {}).values():
        tidy(sub)
    return cmd
