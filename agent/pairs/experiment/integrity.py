"""Whether the files of run folders are whole and their own: what ``localfin audit`` reports
before it audits the calls (docs/faults.md).

Every file a run writes is written whole or not at all (:mod:`localfin.files`), so a torn file
comes from outside: a copy cut short, a disk that failed, a file from elsewhere put in the
folder. :func:`check_tree` reads every ``journal.sqlite`` (SQLite's ``quick_check``, read only),
Parquet file, JSON and JSON Lines file under a folder, and compares each experiment's
``manifest.json`` with its ``config.toml``; each finding names the file and what is wrong.
Logs, the lock file and ``report/`` folders are not checked.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agent.pairs.experiment.config import load_config
from agent.pairs.experiment.run import check_manifest
from localfin.errors import DamagedFileError, LocalfinError
from localfin.files import check_json, check_parquet
from serving.journal import journal_problem

__all__ = ["Damage", "check_tree"]

_SKIP_DIRS = {"report", "__pycache__"}


@dataclass(frozen=True)
class Damage:
    """One damaged file: its path (relative to the folder checked) and what is wrong."""

    path: str
    what: str

    def line(self) -> str:
        return f"{self.path}: {self.what}"


def _problem(path: Path) -> str | None:
    name = path.name
    if name == "journal.sqlite":
        return journal_problem(path)
    if name.endswith(".parquet"):
        return check_parquet(path)
    if name.endswith(".jsonl"):
        return check_json(path, lines=True)
    if name.endswith(".json"):
        return check_json(path)
    return None


def check_tree(root: str | Path) -> list[Damage]:
    """Every damaged file at or below ``root`` (module doc), in path order."""
    base = Path(root)
    found: list[Damage] = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        folder = Path(dirpath)
        for name in sorted(filenames):
            what = _problem(folder / name)
            if what is not None:
                found.append(Damage((folder / name).relative_to(base).as_posix(), what))
        if "config.toml" in filenames and "manifest.json" in filenames:
            found.extend(_foreign_manifest(folder, base, found))
    return found


def _foreign_manifest(folder: Path, base: Path, found: list[Damage]) -> list[Damage]:
    rel = (folder / "manifest.json").relative_to(base).as_posix()
    if any(d.path == rel for d in found):
        return []  # torn: said already
    try:
        cfg = load_config(folder / "config.toml")
    except LocalfinError:
        return []  # not an experiment's config (or its store moved): nothing to compare
    try:
        check_manifest(folder, cfg)
    except DamagedFileError as exc:
        return [Damage(rel, f"records another configuration than config.toml ({_why(str(exc))})")]
    return []


def _why(message: str) -> str:
    start, end = message.find("("), message.find("): it was not")
    return message[start + 1 : end] if 0 <= start < end else message
