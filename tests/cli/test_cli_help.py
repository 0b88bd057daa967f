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
_ROLE = re.compile(r":(?:mod|func|class|data|meth|attr|obj|exc|ref|doc|term|py:\w+):`")
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


def problems(shown: str) -> list[str]:
    """What a user should not meet in a rendered help page."""
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
            found.append(f"{what}: {line.strip()}")
    return found


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(("localfin", *p)))
def test_every_help_page_reads_as_written(cli, monkeypatch, path):
    monkeypatch.setenv("COLUMNS", "160")
    r = cli(*path, "--help")
    assert r.code == 0, r.err
    assert problems(r.out) == []
    cmd = _find(path)
    params = [p for p in cmd.params if not getattr(p, "hidden", False)]  # a benchmark's: built now
    texts = [cmd.help or "", *(p.help or "" for p in params)]
    assert {t.split(".")[0]: lost_words(t, r.out) for t in texts if lost_words(t, r.out)} == {}


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
