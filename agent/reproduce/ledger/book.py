"""The protocol ledger: one TOML file per paper (``moira.toml``, ``finacumen.toml`` beside this
module) that declares every setting able to move a reported number.

One ``[[setting]]`` per effective setting key (:mod:`agent.reproduce.ledger.effective`), with
what the paper says about it (``paper``, in our words), what the authors' released code does
(``authors``), and every value a shipped config or the code default uses, each with its
provenance and the locator that proves it:

- ``provenance = "paper"``: the paper states this value. The row carries ``section`` (where:
  ``"§4.1"``, ``"App. A.3"``, ``"Table 6"``, ``"Fig. 3"``) and ``quote``: a few words (2 to 25,
  at most 200 characters) that occur verbatim in the paper's text, near which the value is
  stated. Where our value is the paper's statement put in our units or our code's words (ten
  years as 2,520 sessions, "the official split" as ``test_share = 0``), ``stated`` gives what
  the paper states (a number, a string, or a list of them) and ``why`` says the conversion. If
  the paper does not state the value, the row is ``ours``, never ``paper``.
- ``provenance = "authors"``: the authors' released code uses it. The row carries ``at``, the
  file and line at the pinned commit (:data:`AUTHORS_REPOS`): ``"FinAcumen/<path>:<line>"`` or
  ``"FinMem/<path>:<first>-<last>"`` (at most :data:`MAX_AT_LINES` lines, the path relative to
  that repository's root), and ``token``: a string, or a list of strings, each of which occurs
  on that line or within that range.
- ``provenance = "ours"``: our choice, with ``why`` (what we chose and why, and what the paper
  leaves unsaid).
- an ``operational`` setting cannot change a result (paths, workers, timeouts, retries) and
  lists no values.

:mod:`agent.reproduce.ledger.locate` checks every ``quote`` against the paper's text and every
``token`` against the authors' file, and a test runs it on both ledgers.

A value is written as ``value = ...`` (TOML's own types), ``unset = true`` (the field is
unset, None in code), ``any = true`` (every value: a table's own data selection, whose
provenance the entry states once) or ``digest = "..."`` (a long list, such as a keyword table,
identified by the first 12 hex digits of the sha256 of its canonical JSON, :func:`digest`).

A value row applies wherever its key has that value, unless it carries ``where``, a table that
limits it to a scope (:meth:`LedgerValue.applies`):

- ``config = [...]``: the reproduction configs (their ``[reproduce] name``; ``defaults`` is the
  code defaults' document) where it applies;
- ``cell = [...]``: shell patterns over the cell that uses the value (a Moira cell's folder,
  ``q4-think/main``; a FinAcumen arm, ``arm base``);
- any other key, a dotted setting key with a list of values: the row applies where that setting,
  in the same cell (and the same array element, for two keys of one array), takes only values
  from the list (``"model.backbone" = ["qwen3-4b", "qwen3-32b"]``).

A value is thus resolved per key and per use, never by the value alone: the same value of one
key can be the paper's in one cell and ours in another, and one config's ``paper`` row does not
make the value the paper's wherever it appears. Rows are tried in file order, exact values
before ``any``; the first row that matches and applies wins.

Keys are dotted paths; ``[]`` stands for every element of an array (``variants[].policy.
max_cycles``) and ``*`` for any one path segment. An exact key wins over a pattern.

``default_differs`` on an entry says why the code default is not the paper's value where the
paper states one (the defaults follow the paper otherwise; a test holds every code default to
its entry's ``paper`` values, and the protocol pages list the entries that carry it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from agent.reproduce.ledger.values import canon, digest, same_value
from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "PROVENANCES",
    "STAGES",
    "LEDGER_PAPERS",
    "AUTHORS_REPOS",
    "MAX_AT_LINES",
    "SECTION_FORMS",
    "Use",
    "parse_at",
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


#: The authors' released repositories a row's ``at`` may name: (GitHub repository, pinned commit).
AUTHORS_REPOS = {
    "FinAcumen": ("CamelliaLilium/FinAcumen", "16246593c75e81fac0b57c05e739761dae3e6fe9"),
    "FinMem": ("pipiku915/FinMem-LLM-StockTrading", "be814aa47970de9bf2fdd6a1d5a60ae5cf361b46"),
}
#: The longest line range an ``at`` may name (a locator points at a few lines, not a file).
MAX_AT_LINES = 60
#: The forms of a ``section`` (a paper row's place in the paper).
SECTION_FORMS = ('"§4.1"', '"App. A.3"', '"App. C"', '"Table 6"', '"Fig. 3"', '"Algorithm 1"')
_SECTION = re.compile(r"^(§\d+(\.\d+)*|App\. [A-Z](\.\d+)*|Table \d+|Fig\. \d+|Algorithm \d+)$")
_AT = re.compile(r"^(?P<repo>[A-Za-z]+)/(?P<path>[^:\s]+):(?P<first>\d+)(-(?P<last>\d+))?$")
_QUOTE_WORDS = (2, 25)
_QUOTE_CHARS = 200
#: The fields a value row may carry, by provenance (besides value/unset/any/digest and why).
_LOCATORS = {"paper": ("section", "quote", "stated"), "authors": ("at", "token"), "ours": ()}


def parse_at(at: str) -> tuple[str, str, int, int]:
    """``(repo, path, first line, last line)`` of an ``at`` locator (see the module docstring)."""
    m = _AT.match(at)
    if m is None:
        raise ConfigError(
            f"at={at!r}; allowed: '<Repo>/<path>:<line>' or '<Repo>/<path>:<first>-<last>', <Repo> one of "
            + ", ".join(AUTHORS_REPOS)
        )
    repo, path = m["repo"], m["path"]
    first = int(m["first"])
    last = int(m["last"]) if m["last"] else first
    if repo not in AUTHORS_REPOS:
        raise ConfigError(f"at={at!r}: repository {repo!r}; allowed: {', '.join(AUTHORS_REPOS)}")
    if first < 1 or last < first or last - first + 1 > MAX_AT_LINES:
        raise ConfigError(
            f"at={at!r}: lines {first}-{last}; allowed: 1 <= first <= last, at most {MAX_AT_LINES} lines"
        )
    return repo, path, first, last


@dataclass(frozen=True)
class Use:
    """Where a setting's value is used: the reproduction ``config`` (its name), the ``cell`` (a
    Moira cell's folder, a FinAcumen arm as ``arm NAME``; "" for a config without cells), the
    array ``element`` (``variant full``; "") and ``lookup``: the values another key takes in the
    same cell (and element), for a row's ``where`` conditions on other keys."""

    config: str = ""
    cell: str = ""
    element: str = ""
    lookup: Callable[[str], list[Any]] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class LedgerValue:
    """One value of a setting, where it comes from and the locator that proves it.

    value: the value (None with ``unset``); unset: the field is unset (None); any: every value
    (a table's own data selection); digest: a long value identified by :func:`digest`;
    provenance: one of :data:`PROVENANCES`; why: the reason (required for ``ours``, and for a
    ``paper`` row with ``stated``); reads_gold: this value makes the run read the gold answer or
    gold evidence at test time. ``paper`` rows: section, quote and optionally stated;
    ``authors`` rows: at and token (a tuple of strings); where: the scope the row is limited to,
    as ``(name, allowed values)`` pairs (see the module docstring).
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
    stated: Any = None
    at: str = ""
    token: tuple[str, ...] = ()
    where: tuple[tuple[str, tuple[Any, ...]], ...] = ()

    def __post_init__(self) -> None:
        if self.provenance not in PROVENANCES:
            raise ConfigError(
                f"ledger value provenance={self.provenance!r}; allowed: {', '.join(PROVENANCES)}"
            )
        if isinstance(self.token, str):
            object.__setattr__(self, "token", (self.token,))
        for name in ("section", "quote", "stated", "at", "token"):
            given = getattr(self, name) not in ("", None, ())
            if given and name not in _LOCATORS[self.provenance]:
                kind = "paper" if name in _LOCATORS["paper"] else "authors"
                raise ConfigError(
                    f"ledger value {self.label()}: {name} is a locator of {kind} rows, not of "
                    f"{self.provenance} rows; allowed here: {', '.join(_LOCATORS[self.provenance]) or 'why'}"
                )
        if self.provenance == "ours" and not self.why.strip():
            raise ConfigError(
                f"ledger value {self.label()}: provenance 'ours' needs a why "
                "(what we chose, and what the paper leaves unsaid)"
            )
        if self.provenance == "paper":
            self._check_paper()
        if self.provenance == "authors":
            self._check_authors()
        for name, allowed in self.where:
            if name not in ("config", "cell") and not _KEY.match(name):
                raise ConfigError(
                    f"ledger value {self.label()}: where key {name!r}; "
                    "allowed: config, cell or a dotted setting key"
                )
            if not allowed:
                raise ConfigError(f"ledger value {self.label()}: where {name} lists no value")

    def _check_paper(self) -> None:
        if not _SECTION.match(self.section):
            raise ConfigError(
                f"ledger value {self.label()}: section={self.section!r}; a paper value needs the section "
                f"that states it, one of the forms {', '.join(SECTION_FORMS)}"
            )
        words = len(self.quote.split())
        lo, hi = _QUOTE_WORDS
        if not lo <= words <= hi or len(self.quote) > _QUOTE_CHARS:
            raise ConfigError(
                f"ledger value {self.label()}: quote={self.quote!r}; a paper value needs a quote of {lo} "
                f"to {hi} words (at most {_QUOTE_CHARS} characters) that occurs verbatim in the paper "
                "near the value"
            )
        if self.stated is not None and not self.why.strip():
            raise ConfigError(
                f"ledger value {self.label()}: stated={self.stated!r} needs a why "
                "(how the value follows from it)"
            )

    def _check_authors(self) -> None:
        try:
            parse_at(self.at)
        except ConfigError as exc:
            raise ConfigError(
                f"ledger value {self.label()}: an authors value needs its file and line: {exc}"
            ) from None
        if not self.token or not all(isinstance(t, str) and t.strip() for t in self.token):
            raise ConfigError(
                f"ledger value {self.label()}: token={list(self.token)!r}; an authors value needs a token "
                "(a string or a list of strings) found at its line(s)"
            )

    def matches(self, value: Any) -> bool:
        if self.any:
            return True
        if self.unset:
            return value is None
        if self.digest:
            return value is not None and digest(value) == self.digest
        return value is not None and same_value(self.value, value)

    def applies(self, use: Use | None) -> bool:
        """Whether the row's ``where`` holds for ``use`` (a row without ``where`` applies
        everywhere; a scoped row never applies where no use is known)."""
        if not self.where:
            return True
        if use is None:
            return False
        for name, allowed in self.where:
            if name == "config":
                if use.config not in allowed:
                    return False
            elif name == "cell":
                if not any(fnmatchcase(use.cell, str(p)) for p in allowed):
                    return False
            else:
                seen = use.lookup(name) if use.lookup is not None else []
                if not seen or not all(any(same_value(a, v) for a in allowed) for v in seen):
                    return False
        return True

    def label(self) -> str:
        """The value as the docs show it."""
        if self.any:
            return "any"
        if self.unset:
            return "unset"
        if self.digest:
            return f"sha256 {self.digest}"
        return json.dumps(canon(self.value))

    def locator(self) -> str:
        """The row's evidence in one line: ``§4.1 "quote"`` for a paper row, ``Repo/path:line``
        for an authors row, "" for ours."""
        if self.provenance == "paper":
            return f'{self.section} "{self.quote}"'
        if self.provenance == "authors":
            return self.at
        return ""

    def scope_text(self) -> str:
        """The row's ``where`` in words ("" when it applies everywhere)."""
        return "; ".join(f"{n} in {', '.join(str(a) for a in allowed)}" for n, allowed in self.where)


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

    def value_for(self, value: Any, use: Use | None = None) -> LedgerValue | None:
        """The listed row of ``value`` that applies to ``use`` (exact values before ``any``, then
        file order), or None. Without a use, only rows without ``where`` apply."""
        rows = [v for v in self.values if v.applies(use)]
        exact = [v for v in rows if not v.any and v.matches(value)]
        if exact:
            return exact[0]
        return next((v for v in rows if v.any), None)

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
            fixed = {k: v[k] for k in v if k not in ("value", "token", "where")}
            try:
                vals.append(
                    LedgerValue(
                        value=v.get("value"),
                        token=_tokens(v["token"]) if "token" in v else (),
                        where=_where(v["where"]) if "where" in v else (),
                        **fixed,
                    )
                )
            except (TypeError, ConfigError) as exc:
                raise cf.key_error(key, f"{row.get('key')!r}: {exc}", file=file) from None
        head = {k: row[k] for k in row if k != "values"}
        try:
            entries.append(LedgerEntry(values=tuple(vals), **head))
        except TypeError as exc:
            raise cf.key_error(f"setting[{i}]", f"{row.get('key')!r}: {exc}", file=file) from None
    return Ledger(paper, tuple(entries))


def _tokens(raw: Any) -> tuple[str, ...]:
    if isinstance(raw, str):
        return (raw,)
    if isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        return tuple(raw)
    raise ConfigError(f"token={raw!r}; allowed: a string or a list of strings")


def _where(raw: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"where={raw!r}; allowed: a table of config, cell or setting keys to lists of values"
        )
    return tuple((str(k), tuple(v) if isinstance(v, list) else (v,)) for k, v in raw.items())


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
