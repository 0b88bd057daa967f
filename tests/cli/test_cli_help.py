"""Every command's ``--help`` as a user reads it (hidden ones and every benchmark included): no word
of a help text lost to markup (a ``[model]`` table name, an ``[low, high]`` interval), no empty
brackets left where one was, no developer markup (reST roles, double backticks, ``python -m``
examples), usage lines in Unix form (``PATH``, not ``{path}``), no ``<bool>`` on a plain flag and
no Python type (``<list[Path]>``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer

from localfin_cli.main import command

_BOX = re.compile(r"[\s│╭╮╰╯─┃━]+")
_EMPTY = re.compile(r"\(\s*\)|\[\s*\]")
_ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|obj|exc|ref|doc|term|py:\w+):`?[\w.~]")
_WORD = re.compile(r"[A-Za-z0-9]+")


def _walk(cmd: Any, path: tuple[str, ...] = (), parent: Any = None) -> Iterator[tuple[str, ...]]:
    ctx = typer.Context(cmd, parent=parent, info_name=path[-1] if path else "localfin")
    yield path
    if callable(getattr(cmd, "list_commands", None)):
        names = set(cmd.list_commands(ctx)) | set(getattr(cmd, "commands", {}))  # hidden ones too
        for name in sorted(names):
            sub = cmd.get_command(ctx, name)
            if sub is not None:
                yield from _walk(sub, (*path, name), ctx)


COMMANDS = list(_walk(command()))


def _find(path: tuple[str, ...]) -> Any:
    cmd, ctx = command(), None
    for name in path:
        ctx = typer.Context(cmd, parent=ctx, info_name=name)
        cmd = cmd.get_command(ctx, name)
    return cmd


def lost_words(raw: str, shown: str) -> list[str]:
    """The words of help text ``raw`` that the rendered ``shown`` does not hold in their order
    (line breaks, box drawing and markup aside)."""
    flat, at, lost = _BOX.sub("", shown), 0, []
    for word in _WORD.findall(raw):
        i = flat.find(word, at)
        if i < 0:
            lost.append(word)
        else:
            at = i + len(word)
    return lost


#: what each finding means and how to fix the help text (shown when the test fails)
FIXES = {
    "usage in braces": "an argument shown as {name}: build the command through localfin_cli.main.command() "
    "(help_format.tidy turns arguments into PlainArgument) or give it a metavar such as PATH",
    "empty brackets": "a word in [brackets] was taken for a rich style tag: the command's typer.Typer needs "
    "rich_markup_mode=help_format.MARKUP (Markdown, where [model] is shown as written)",
    "a reST role": "help texts are Markdown: write `name`, not :mod:`name` (a benchmark's help is its "
    "parser's description, not the module docstring)",
    "double backticks": "help texts are Markdown: write `name`, not ``name``",
    "a python -m example": "show the command a user types (localfin bench ...), not python -m",
    "a flag's <bool>": "a plain flag shows no value type: help_format.tidy gives it metavar ''; a command "
    "built outside localfin_cli.main.command() must call tidy itself",
    "a Python type": 'give the option a metavar (metavar="PATH") or build it through help_format.tidy',
    "lost words": "these words of the help text are not on the page: markup took them (square brackets "
    "are rich style tags unless rich_markup_mode=help_format.MARKUP; *x* and _x_ become emphasis)",
}


def problems(shown: str) -> list[str]:
    """What a user should not meet in a rendered help page, each as ``kind: the line``."""
    found = []
    usage = next((line for line in shown.splitlines() if "Usage:" in line), "")
    if "{" in usage or "}" in usage:
        found.append(f"usage in braces: {usage.strip()}")
    for what, pattern in (
        ("empty brackets", _EMPTY),
        ("a reST role", _ROLE),
        ("double backticks", re.compile("``")),
        ("a python -m example", re.compile(r"python3? -m ")),
        ("a flag's <bool>", re.compile("<bool>")),
        ("a Python type", re.compile(r"<(?:list|tuple|dict)\[")),
    ):
        m = pattern.search(shown)
        if m:
            line = next(li for li in shown.splitlines() if m.group(0) in li)
            found.append(f"{what}: {line.strip().strip('│┃').strip()}")
    return found


def _whose(param: Any) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or list(getattr(param, "opts", []))
    return opts[0] if opts else str(param.name).upper()


def report(name: str, found: list[str]) -> str:
    """The failure message for help page ``name``: each finding with its fix."""
    lines = [f"`{name} --help` does not read as written:"]
    for f in found:
        kind = f.split(":")[0]
        lines += [f"  - {f}", f"    fix: {FIXES[kind]}"]
    return "\n".join(lines)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(("localfin", *p)))
def test_every_help_page_reads_as_written(cli, monkeypatch, path):
    name = " ".join(("localfin", *path))
    monkeypatch.setenv("COLUMNS", "160")
    r = cli(*path, "--help")
    assert r.code == 0, f"`{name} --help` exits {r.code}:\n{r.err[-3000:]}"
    found = problems(r.out)
    cmd = _find(path)
    params = [p for p in cmd.params if not getattr(p, "hidden", False)]  # a benchmark's: built now
    texts = [("the command's help", cmd.help or "")]
    texts += [(f"help of {_whose(p)}", p.help or "") for p in params]
    for whose, text in texts:
        lost = lost_words(text, r.out)
        if lost:
            found.append(f"lost words: {whose} loses {lost}")
    assert not found, report(name, found) + f"\n--- the page as shown ---\n{r.out}"


def test_the_checks_catch_what_they_look_for():
    shown = (
        " Usage: localfin audit [OPTIONS] {path}\n A models file ([] tables) adding keys.\n"
        " See :mod:`bench.records`, ``x``: python -m bench.kernels\n --json  <bool>  <list[Path]>\n"
    )
    assert [p.split(":")[0] for p in problems(shown)] == [
        "usage in braces",
        "empty brackets",
        "a reST role",
        "double backticks",
        "a python -m example",
        "a flag's <bool>",
        "a Python type",
    ]
    assert lost_words("A models file ([[models]] tables) adding keys.", shown) == ["models"]
    assert lost_words("outside [low, high], as a fraction", "│ outside , as a │\n│ fraction │") == [
        "low",
        "high",
    ]
    assert lost_words("a b-c", " a\n│ b │ -c") == []
    assert set(FIXES) >= {p.split(":")[0] for p in problems(shown)} | {"lost words"}
    message = report("localfin x", problems(shown)[:1])
    assert "`localfin x --help`" in message and "fix: " in message
