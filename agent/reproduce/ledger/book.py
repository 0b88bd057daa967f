"""The protocol ledger: one TOML file per paper (``moira.toml``, ``finacumen.toml`` beside this
module) that declares every setting able to move a reported number.

One ``[[setting]]`` per effective setting key (:mod:`agent.reproduce.ledger.effective`), with
what the paper says about it, what the authors' released code does, and every value a shipped
config or the code default uses, each with its provenance:

- ``paper``: the paper states this value (its section and point, in ``paper``);
- ``authors``: the authors' released code uses it (file and fact, in ``authors``);
- ``ours``: our choice, with ``why`` (and what the paper says or leaves unsaid);
- an ``operational`` setting cannot change a result (paths, workers, timeouts, retries) and
  lists no values.

A value is written as ``value = ...`` (TOML's own types), ``unset = true`` (the field is
unset, None in code), ``any = true`` (every value: a table's own data selection, whose
provenance the entry states once) or ``digest = "..."`` (a long list, such as a keyword table,
identified by the first 12 hex digits of the sha256 of its canonical JSON, :func:`digest`).

Keys are dotted paths; ``[]`` stands for every element of an array (``variants[].policy.
max_cycles``) and ``*`` for any one path segment. An exact key wins over a pattern.

``default_differs`` on an entry says why the code default is not the paper's value where the
paper states one (the defaults follow the paper otherwise, :func:`defaults_off_paper`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "PROVENANCES",
    "STAGES",
    "LEDGER_PAPERS",
    "LedgerValue",
    "LedgerEntry",
    "Ledger",
    "canon",
    "digest",
    "same_value",
    "load_ledger",
    "parse_ledger",
    "entries_by_stage",
]

#: Where a value comes from (an ``operational`` setting has none).
PROVENANCES = ("paper", "authors", "ours")
#: The stages of each paper's protocol, in the order the protocol pages show them.
STAGES = {
    "moira": (
        "data",
        "screen",
        "selection",
        "direction",
        "reflection",
        "lifecycle",
        "baselines",
        "metrics",
        "serving",
    ),
    "finacumen": ("data", "solver", "tools", "memory", "bank", "scoring", "judge", "serving"),
}
#: The ledger file of each paper (``[reproduce] paper`` of a config).
LEDGER_PAPERS = tuple(STAGES)
_KEY = re.compile(r"^[a-z_*][a-z0-9_*]*(\[\])?(\.[a-z_*][a-z0-9_*]*(\[\])?)*$")


def canon(value: Any) -> Any:
    """``value`` in the plain form values are compared in: dataclasses as tables, tuples as
    lists, paths and dates as strings, whole floats as integers."""
    value = cf.plain(value) if not isinstance(value, (str, bytes)) else value
    if isinstance(value, Mapping):
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, (dt.date, Path)):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def digest(value: Any) -> str:
    """The first 12 hex digits of the sha256 of ``value``'s canonical JSON."""
    text = json.dumps(canon(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def same_value(a: Any, b: Any) -> bool:
    """Whether two values are equal once canonical (floats to 1e-9 relative)."""
    a, b = canon(a), canon(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b


@dataclass(frozen=True)
class LedgerValue:
    """One value of a setting and where it comes from.

    value: the value (None with ``unset``); unset: the field is unset (None); any: every value
    (a table's own data selection); digest: a long value identified by :func:`digest`;
    provenance: one of :data:`PROVENANCES`; why: the reason (required for ``ours``);
    reads_gold: this value makes the run read the gold answer or gold evidence at test time;
    section, quote: where the paper states a ``paper`` value (``"App. A.2"``) and a few words of
    its text near it; at, token: where the authors' code has an ``authors`` value
    (``"<Repo>/<path>:<line>"`` or ``:<first>-<last>``) and the text (or texts) found there.
    """

    provenance: str
    value: Any = None
    unset: bool = False
    any: bool = False
    digest: str = ""
    why: str = ""
    reads_gold: bool = False
    section: str = ""
    quote: str = ""
    at: str = ""
    token: str | list[str] = ""

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCES:
            raise ConfigError(
                f"ledger value provenance={self.provenance!r}; allowed: {', '.join(PROVENANCES)}"
            )
        if self.provenance == "ours" and not self.why.strip():
            raise ConfigError(f"ledger value {self.label()}: provenance 'ours' needs a why")

    def matches(self, value: Any) -> bool:
        if self.any:
            return True
        if self.unset:
            return value is None
        if self.digest:
            return value is not None and digest(value) == self.digest
        return value is not None and same_value(self.value, value)

    def label(self) -> str:
        """The value as the docs show it."""
        if self.any:
            return "any"
        if self.unset:
            return "unset"
        if self.digest:
            return f"sha256 {self.digest}"
        return json.dumps(canon(self.value))


@dataclass(frozen=True)
class LedgerEntry:
    """One setting of the ledger (see the module docstring)."""

    key: str
    stage: str
    title: str
    paper: str = ""
    authors: str = ""
    operational: bool = False
    why: str = ""
    default_differs: str = ""
    values: tuple[LedgerValue, ...] = ()

    def __post_init__(self) -> None:
        if not _KEY.match(self.key):
            raise ConfigError(f"ledger key {self.key!r}; allowed: dotted lower-case names, [] and *")
        if self.operational and self.values:
            raise ConfigError(f"ledger {self.key}: an operational setting lists no values")
        if not self.operational and not self.values:
            raise ConfigError(f"ledger {self.key}: list its values (or mark it operational)")
        if self.operational and not self.why.strip():
            raise ConfigError(f"ledger {self.key}: say why it cannot change a result (why)")
        if any(v.provenance == "paper" for v in self.values) and not self.paper.strip():
            raise ConfigError(f"ledger {self.key}: a paper value needs the paper's point (paper)")
        if any(v.provenance == "authors" for v in self.values) and not self.authors.strip():
            raise ConfigError(f"ledger {self.key}: an authors value needs their file and fact (authors)")

    @property
    def pattern(self) -> re.Pattern[str]:
        return _pattern(self.key)

    @property
    def wildcards(self) -> int:
        return self.key.count("*")

    def matches(self, key: str) -> bool:
        return bool(self.pattern.match(key))

    def value_for(self, value: Any) -> LedgerValue | None:
        """The listed value ``value`` is (exact values before ``any``), or None."""
        exact = [v for v in self.values if not v.any and v.matches(value)]
        if exact:
            return exact[0]
        return next((v for v in self.values if v.any), None)

    def paper_values(self) -> list[LedgerValue]:
        return [v for v in self.values if v.provenance == "paper" and not v.any]


@cache
def _pattern(key: str) -> re.Pattern[str]:
    parts = []
    for seg in key.split("."):
        arr = seg.endswith("[]")
        name = seg[:-2] if arr else seg
        rx = "[a-z0-9_]+" if name == "*" else re.escape(name)
        parts.append(rx + (r"\[\]" if arr else ""))
    return re.compile("^" + r"\.".join(parts) + "$")


@dataclass(frozen=True)
class Ledger:
    """One paper's ledger."""

    paper: str
    entries: tuple[LedgerEntry, ...]

    def __post_init__(self) -> None:
        stages = STAGES.get(self.paper)
        if stages is None:
            raise ConfigError(f"ledger paper={self.paper!r}; allowed: {', '.join(LEDGER_PAPERS)}")
        seen: set[str] = set()
        for e in self.entries:
            if e.stage not in stages:
                raise ConfigError(
                    f"ledger {self.paper} {e.key}: stage={e.stage!r}; allowed: {', '.join(stages)}"
                )
            if e.key in seen:
                raise ConfigError(f"ledger {self.paper}: key {e.key!r} is listed twice")
            seen.add(e.key)

    def entry_for(self, key: str) -> LedgerEntry | None:
        """The entry of ``key``: an exact key, else the matching pattern with fewest wildcards."""
        hits = [e for e in self.entries if e.matches(key)]
        if not hits:
            return None
        return min(hits, key=lambda e: (e.wildcards, -len(e.key)))


def parse_ledger(data: Mapping[str, Any], paper: str, *, file: str | Path | None = None) -> Ledger:
    """A :class:`Ledger` from a parsed TOML document (errors name the file and the entry)."""
    cf.check_keys(data, ["setting"], file=file)
    raw = data.get("setting", [])
    if not isinstance(raw, list):
        raise cf.key_error("setting", "allowed: [[setting]] tables", file=file)
    entries = []
    for i, row in enumerate(raw):
        if not isinstance(row, Mapping):
            raise cf.key_error(f"setting[{i}]", "allowed: a table", file=file)
        vals = []
        for j, v in enumerate(row.get("values", [])):
            key = f"setting[{i}].values[{j}]"
            if not isinstance(v, Mapping):
                raise cf.key_error(key, "allowed: a table", file=file)
            kinds = [k for k in ("value", "unset", "any", "digest") if k in v]
            if len(kinds) != 1:
                raise cf.key_error(
                    key,
                    f"{row.get('key')!r}: exactly one of value, unset, any, digest; got {kinds}",
                    file=file,
                )
            fixed = {k: v[k] for k in v if k != "value"}
            try:
                vals.append(LedgerValue(value=v.get("value"), **fixed))
            except TypeError as exc:
                raise cf.key_error(key, f"{row.get('key')!r}: {exc}", file=file) from None
        head = {k: row[k] for k in row if k != "values"}
        try:
            entries.append(LedgerEntry(values=tuple(vals), **head))
        except TypeError as exc:
            raise cf.key_error(f"setting[{i}]", f"{row.get('key')!r}: {exc}", file=file) from None
    return Ledger(paper, tuple(entries))


@cache
def load_ledger(paper: str) -> Ledger:
    """The packaged ledger of ``paper`` (``moira`` or ``finacumen``)."""
    if paper not in STAGES:
        raise ConfigError(f"ledger of paper {paper!r}; allowed: {', '.join(LEDGER_PAPERS)}")
    res = resources.files("agent.reproduce").joinpath("ledger", f"{paper}.toml")
    text = res.read_text(encoding="utf-8")
    return parse_ledger(cf.loads_toml(text, f"ledger {paper}.toml"), paper, file=f"ledger/{paper}.toml")


def entries_by_stage(ledger: Ledger) -> list[tuple[str, Sequence[LedgerEntry]]]:
    """The entries grouped by stage, in the paper's stage order."""
    return [(s, [e for e in ledger.entries if e.stage == s]) for s in STAGES[ledger.paper]]
