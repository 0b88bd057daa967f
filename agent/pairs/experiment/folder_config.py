"""The copy of an experiment's config in its folder (``config.toml``): the text the experiment was
started with, with every path stated absolutely.

A config names its market store (and its prompt folders) relative to its own folder, or leaves
the store to ``$LOCALFIN_STORE``; read from the experiment folder, the same words would name
another file, or none. :func:`folder_copy` therefore writes each such path as the absolute path
the experiment used (``[experiment] store`` always, ``[prompt] dir`` and ``[baselines.finmem]
prompt_dir`` where the config sets them), so that ``localfin audit``, ``localfin report`` and a
resume read the copy as the same experiment. The rest of the text, comments included, is kept:
only the line of each such key changes (or a ``store`` line is added under ``[experiment]``);
a text this line edit cannot handle (dotted keys, inline tables) is written anew from its
parsed document, under a comment saying so.

:func:`same_path` compares two spellings of a path by meaning, as the manifest check does.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from localfin import configfile as cf

__all__ = ["folder_copy", "same_path"]

_HEADER = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\s\"-]+?)\s*\]\s*(#.*)?$")


def _is_absolute(value: Any) -> bool:
    return isinstance(value, str) and bool(value) and Path(value).expanduser().is_absolute()


def _pins(doc: dict[str, Any], cfg: Any) -> dict[tuple[str, str], str]:
    """(table, key) -> the absolute path to write, for every path key the text does not already
    state absolutely."""
    pins: dict[tuple[str, str], str] = {}
    exp = doc.get("experiment") if isinstance(doc.get("experiment"), dict) else {}
    if not _is_absolute(exp.get("store")):
        pins[("experiment", "store")] = str(cfg.store)
    prompt = doc.get("prompt") if isinstance(doc.get("prompt"), dict) else {}
    if prompt.get("dir") and not _is_absolute(prompt.get("dir")):
        pins[("prompt", "dir")] = str(cfg.prompt.dir)
    base = doc.get("baselines") if isinstance(doc.get("baselines"), dict) else {}
    fm = base.get("finmem") if isinstance(base.get("finmem"), dict) else {}
    if fm.get("prompt_dir") and not _is_absolute(fm.get("prompt_dir")):
        pins[("baselines.finmem", "prompt_dir")] = str(cfg.baselines.finmem.prompt_dir)
    return pins


def _merged(doc: dict[str, Any], pins: dict[tuple[str, str], str]) -> dict[str, Any]:
    out = doc
    for (table, key), value in pins.items():
        over: dict[str, Any] = {key: value}
        for part in reversed(table.split(".")):
            over = {part: over}
        out = cf.merge(out, over)
    return out


def _line(key: str, value: str, was: Any) -> str:
    import tomli_w

    text = tomli_w.dumps({key: value}).strip()
    return f"{text}  # given as {was!r}" if isinstance(was, str) else text


def _edit(text: str, doc: dict[str, Any], pins: dict[tuple[str, str], str]) -> str | None:
    """``text`` with the pinned keys' lines replaced or added; None where a table header is not
    found (dotted keys, inline tables: the caller writes the document anew)."""
    lines = text.splitlines()
    for (table, key), value in pins.items():
        head = next(
            (
                i
                for i, ln in enumerate(lines)
                if (m := _HEADER.match(ln)) and m.group(1).replace(" ", "") == table
            ),
            None,
        )
        if head is None:
            return None
        end = next((i for i in range(head + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        at = next(
            (i for i in range(head + 1, end) if re.match(rf"^\s*{re.escape(key)}\s*=", lines[i])),
            None,
        )
        was: Any = doc
        for part in (*table.split("."), key):
            was = was.get(part) if isinstance(was, dict) else None
        new = _line(key, value, was)
        if at is None:
            lines.insert(head + 1, new)
        else:
            lines[at] = new
    return "\n".join(lines) + "\n"


def folder_copy(text: str, cfg: Any) -> str:
    """The experiment folder's ``config.toml`` for the config ``text`` that parsed into ``cfg``
    (an :class:`~agent.pairs.experiment.config.ExperimentConfig`): ``text`` itself when it
    states every path absolutely, else ``text`` with those paths made absolute (module doc)."""
    doc = cf.loads_toml(text, "the experiment config")
    pins = _pins(doc, cfg)
    if not pins:
        return text
    want = _merged(doc, pins)
    edited = _edit(text, doc, pins)
    if edited is not None:
        try:
            if tomllib.loads(edited) == want:
                return edited
        except tomllib.TOMLDecodeError:
            pass  # the line edit met a shape it does not handle: write the document anew
    return (
        "# the experiment's config, written anew with its paths made absolute (comments not kept)\n"
        + cf.dumps(want)
    )


def same_path(a: Any, b: Any) -> bool:
    """Whether two recorded spellings of a path name the same file: equal once resolved (a
    relative one against the working directory), or, where one was recorded relative to a folder
    unknown here, the other ends with it."""
    if not (isinstance(a, str) and isinstance(b, str)) or not a or not b:
        return a == b
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    if pa.resolve() == pb.resolve():
        return True
    if pa.is_absolute() == pb.is_absolute():
        return False
    rel, whole = (pa, pb) if not pa.is_absolute() else (pb, pa)
    parts = Path(os.path.normpath(rel)).parts
    return ".." not in parts and whole.resolve().parts[-len(parts) :] == parts
