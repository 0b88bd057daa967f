"""The prompt checklist: every rule and input of the Moira paper's Appendix A and where our prompt
files and payload builders carry it (``docs/moira_prompt_checklist.yaml``).

:func:`load_checklist` reads the entries, :func:`locate` finds each entry's text in its files
(whitespace ignored) and the line it starts on, and :func:`render_markdown` writes the table of
``docs/moira_prompt_checklist.md``. Run ``python -m agent.pairs.moira.checklist CHECKLIST.yaml``
from the repository root to print the table (it exits 1 and names every entry whose text is
missing from a file).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from localfin.errors import ConfigError

__all__ = ["Entry", "Found", "load_checklist", "locate", "render_markdown", "main"]

KINDS = ("rule", "input", "reply", "code")


@dataclass(frozen=True)
class Entry:
    """One point of the checklist (the YAML file's header explains the fields)."""

    id: str
    kind: str
    point: str
    where: tuple[str, ...]
    text: str
    note: str = ""


@dataclass(frozen=True)
class Found:
    """Where an entry's text is in one file: ``line`` (1-based; 0 = missing)."""

    entry: Entry
    file: str
    line: int

    @property
    def ok(self) -> bool:
        return self.line > 0


def load_checklist(path: str | Path) -> list[Entry]:
    """The entries of a checklist YAML file (errors name the entry and the field)."""
    import yaml

    rows = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or []
    out: list[Entry] = []
    for k, row in enumerate(rows):
        if not isinstance(row, dict) or not {"id", "kind", "point", "where", "text"} <= set(row):
            raise ConfigError(f"checklist entry {k}: needs id, kind, point, where, text; got {row!r}")
        if row["kind"] not in KINDS:
            allowed = ", ".join(KINDS)
            raise ConfigError(f"checklist entry {row['id']}: kind={row['kind']!r}; allowed: {allowed}")
        out.append(
            Entry(
                str(row["id"]),
                row["kind"],
                str(row["point"]),
                tuple(str(w) for w in row["where"]),
                str(row["text"]),
                str(row.get("note", "")),
            )
        )
    ids = [e.id for e in out]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"checklist ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    return out


def _squash(text: str) -> tuple[str, list[int]]:
    """``text`` with every run of whitespace made one space, and for each character of the
    result the 1-based line of ``text`` it came from."""
    out, lines, line, space = [], [], 1, False
    for ch in text:
        if ch.isspace():
            if not space and out:
                out.append(" ")
                lines.append(line)
            space = True
            if ch == "\n":
                line += 1
            continue
        out.append(ch)
        lines.append(line)
        space = False
    return "".join(out), lines


def locate(entries: Sequence[Entry], root: str | Path) -> list[Found]:
    """Each entry's text in each of its files under ``root`` (line 0 where it is missing)."""
    base = Path(root)
    cache: dict[str, tuple[str, list[int]]] = {}
    out = []
    for e in entries:
        needle = " ".join(e.text.split())
        for f in e.where:
            if f not in cache:
                p = base / f
                cache[f] = _squash(p.read_text(encoding="utf-8")) if p.is_file() else ("", [])
            hay, lines = cache[f]
            at = hay.find(needle)
            out.append(Found(e, f, lines[at] if at >= 0 else 0))
    return out


def _cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).replace("|", "\\|")


def render_markdown(found: Sequence[Found]) -> str:
    """The checklist as a Markdown table, one row per entry and file."""
    head = [
        "# Moira prompt checklist (Appendix A)",
        "",
        "Every rule and input of the Moira paper's Appendix A (A.1 pair selection, A.2 daily direction,",
        "A.3 training reflection, A.4 relationship break, A.5 critical-news verification, A.6 runtime",
        "instruction, appended blocks and payloads), the paper's point in a few words of ours, and the",
        "file and line that carry it in our own wording. Kinds: `rule` (what the model is told),",
        "`input` (what the call sees), `reply` (a field of the answer), `code` (a rule the code applies).",
        "Generated from `moira_prompt_checklist.yaml` by `python -m agent.pairs.moira.checklist`;",
        "`tests/agent/pairs/test_pairs_prompt_checklist.py` fails when a listed text is gone.",
        "",
        "| id | kind | the paper's point | file:line | our text |",
        "|---|---|---|---|---|",
    ]
    rows = []
    for x in found:
        e = x.entry
        where = f"`{x.file}:{x.line}`" if x.ok else f"`{x.file}` (MISSING)"
        text = _cell(e.text) + (f" ({_cell(e.note)})" if e.note else "")
        rows.append(f"| {e.id} | {e.kind} | {_cell(e.point)} | {where} | `{text}` |")
    return "\n".join(head + rows) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the rendered table of the checklist given (run from the repository root)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        sys.stderr.write("usage: python -m agent.pairs.moira.checklist CHECKLIST.yaml\n")
        return 2
    found = locate(load_checklist(args[0]), Path.cwd())
    sys.stdout.write(render_markdown(found))
    missing = [f"{x.entry.id} in {x.file}" for x in found if not x.ok]
    if missing:
        sys.stderr.write("missing: " + ", ".join(missing) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
