"""A checkout of the FinAcumen authors' code, read at run time (``[qa] authors_code = PATH``).

:func:`open_authors_code` parses the files of :data:`agent.qa.authors.pins.AUTHORS_FILES` under
``PATH`` (the repository root, holding ``finacumen/``; never imported or run), finds every text
of :data:`agent.qa.authors.pins.PINS` and compares the sha256 of each with the pinned one. A
checkout that lacks a file or a text, or whose text differs from the pinned commit's, is an
:class:`AuthorsCodeError` that names the file, the text and what differs (every such text at
once), unless ``verify`` is off: then the texts are used as found and
:attr:`AuthorsCode.differs` lists those that differ, which a run declares in its summary.

The :class:`AuthorsCode` hands out the texts by our names (:meth:`~AuthorsCode.text`,
:meth:`~AuthorsCode.template`, :meth:`~AuthorsCode.table`) and remembers which were asked for,
so a run can say which of the authors' texts it sent (:meth:`~AuthorsCode.records`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.authors.pins import AUTHORS_FILES, PINNED_COMMIT, PINNED_REPOSITORY, PINS, Pin, pin
from agent.qa.authors.source import Found, SourceFile, Template, locate
from localfin.errors import ConfigError, InputError

__all__ = ["AuthorsCodeError", "AuthorsCode", "open_authors_code"]


class AuthorsCodeError(ConfigError):
    """The authors' checkout is missing, incomplete, or differs from the pinned commit."""


@dataclass(frozen=True)
class _Read:
    pin: Pin
    found: Found

    @property
    def same(self) -> bool:
        return self.found.sha256.startswith(self.pin.sha16)


class AuthorsCode:
    """The texts of one checkout (see the module docstring). Thread-safe for reading."""

    def __init__(self, root: Path, texts: Mapping[str, _Read], verify: bool) -> None:
        self.root, self.verify = root, verify
        self._texts = dict(texts)
        self._used: set[str] = set()
        self._lock = threading.Lock()

    @property
    def differs(self) -> tuple[str, ...]:
        """Names of the texts that differ from the pinned commit's (only with ``verify`` off)."""
        return tuple(n for n, r in self._texts.items() if not r.same)

    def _get(self, name: str) -> Any:
        pin(name)  # a KeyError naming the known names
        with self._lock:
            self._used.add(name)
        return self._texts[name].found.value

    def text(self, name: str) -> str:
        """The string constant ``name``."""
        v = self._get(name)
        if not isinstance(v, str):
            raise AuthorsCodeError(f"authors' text {name!r} is a {type(v).__name__}, not a string")
        return v

    def template(self, name: str) -> Template:
        """The f-string ``name`` (:class:`agent.qa.authors.source.Template`)."""
        v = self._get(name)
        if not isinstance(v, Template):
            raise AuthorsCodeError(f"authors' text {name!r} is a {type(v).__name__}, not an f-string")
        return v

    def render(self, text: str, /, **values: Any) -> str:
        """The f-string named ``text`` rendered with ``values`` (a field may be called ``name``)."""
        return self.template(text).render(**values)

    def table(self, name: str) -> Any:
        """The literal table ``name`` (a fresh copy each time)."""
        import copy

        return copy.deepcopy(self._get(name))

    def used(self) -> tuple[str, ...]:
        """The names asked for so far, in pin order."""
        with self._lock:
            return tuple(p.name for p in PINS if p.name in self._used)

    def records(self, only_used: bool = True) -> list[dict[str, Any]]:
        """One row per text (those asked for, or all): name, file, lines, sha256 (16 hex
        digits), whether it is the pinned commit's."""
        names = set(self.used()) if only_used else {p.name for p in PINS}
        return [
            {
                "name": p.name,
                "file": f"{p.path}:{r.found.lines}",
                "sha256": r.found.sha256[:16],
                "pinned": r.same,
            }
            for p in PINS
            if p.name in names and (r := self._texts[p.name])
        ]

    def describe(self) -> str:
        """One line for a run's notes."""
        said = (
            f"the texts of {PINNED_REPOSITORY} @ {PINNED_COMMIT[:8]}"
            if not self.differs
            else f"{len(self.differs)} text(s) differing from {PINNED_REPOSITORY} @ {PINNED_COMMIT[:8]} "
            f"(qa.authors_code_verify = false: {', '.join(self.differs)})"
        )
        return f"the authors' prompt texts read from the checkout at {self.root}: {said}"


def _read(root: Path) -> tuple[dict[str, _Read], list[str]]:
    files: dict[str, SourceFile] = {}
    problems: list[str] = []
    out: dict[str, _Read] = {}
    for path in AUTHORS_FILES:
        try:
            files[path] = SourceFile(root / path, path)
        except InputError as exc:
            problems.append(str(exc))
    for p in PINS:
        src = files.get(p.path)
        if src is None:
            continue
        try:
            out[p.name] = _Read(p, locate(src, p.locator))
        except InputError as exc:
            problems.append(f"{exc} (the text {p.name!r})")
    return out, problems


def _open(root: Path, verify: bool) -> AuthorsCode:
    if not root.is_dir():
        raise AuthorsCodeError(
            f"qa.authors_code={str(root)!r}: no such folder; allowed: a checkout of {PINNED_REPOSITORY} at "
            f"commit {PINNED_COMMIT} (the folder holding finacumen/)"
        )
    texts, problems = _read(root)
    if problems:
        raise AuthorsCodeError(
            f"qa.authors_code={str(root)!r} is not a checkout of {PINNED_REPOSITORY} with the texts localfin "
            "reads: " + "; ".join(problems)
        )
    differ = [r for r in texts.values() if not r.same]
    if differ and verify:
        said = "; ".join(
            f"{r.pin.path}:{r.found.lines}: {r.pin.locator} (the text {r.pin.name!r}) has sha256 "
            f"{r.found.sha256[:16]}, the pinned commit's is {r.pin.sha16}"
            for r in differ
        )
        raise AuthorsCodeError(
            f"qa.authors_code={str(root)!r} differs from {PINNED_REPOSITORY} @ {PINNED_COMMIT}: {said}. "
            "Check out that commit, or set qa.authors_code_verify = false to use these texts as they are "
            "(the run then declares it)"
        )
    return AuthorsCode(root, texts, verify)


def open_authors_code(path: str | Path, *, verify: bool = True) -> AuthorsCode:
    """The checkout at ``path`` (see the module docstring), read now (a dozen files parsed; each
    call gives a fresh object, which records the texts its run asks for)."""
    if not str(path).strip():
        raise AuthorsCodeError(
            "qa.authors_code is empty; allowed: the path of a checkout of "
            f"{PINNED_REPOSITORY} at commit {PINNED_COMMIT} (its texts are read at run time, never "
            "stored in localfin)"
        )
    return _open(Path(path).expanduser().resolve(), bool(verify))
