"""Ticker aliases of an import (``localfin data import --alias GOOG=GOOGL``): one ticker's rows
renamed to another's, in every file or in the files of one kind (``news:GOOG=GOOGL``).

Share classes and renamed tickers are the usual cases: a news feed that files Alphabet under
GOOG beside prices under GOOGL. The alias is applied right after a file's tickers are read and
before the import's ``pool`` filter, so the pool names tickers as they are stored.

When, after renaming, two rows of one file share a key, the rule depends on what the rows are:

* prices and filings (a series per ticker): an error naming both rows. Two share classes trade
  at different prices; splicing them into one series would invent moves. Drop one class from the
  file, or scope the alias to the files that hold only one (``news:GOOG=GOOGL``).
* companies (one row per ticker): the row that already carried the target's name is kept and
  the renamed one is skipped (counted); two renamed rows and no target row is an error.
* news (many items per ticker and day): both kept; an exact repeat of (date, ticker, headline)
  is dropped as any repeat is (counted).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from agent.data.errors import DataConfigError

__all__ = ["KINDS", "TickerAlias", "parse_alias", "check_aliases", "apply_aliases"]

#: File kinds an alias can be scoped to.
KINDS = ("prices", "news", "companies", "filings")
_TICKER = re.compile(r"^[A-Z0-9][A-Z0-9.\-^=]*$")


@dataclass(frozen=True)
class TickerAlias:
    """Rename ``source`` to ``target`` in the files of ``kind`` (None: every kind)."""

    source: str
    target: str
    kind: str | None = None

    def __post_init__(self) -> None:
        src, tgt = self.source.strip().upper(), self.target.strip().upper()
        for name, value in (("source", src), ("target", tgt)):
            if not _TICKER.match(value):
                raise DataConfigError(f"alias {name} {value!r} is not a ticker (letters, digits, '.', '-')")
        if src == tgt:
            raise DataConfigError(f"alias {src}={tgt} maps a ticker to itself")
        if self.kind is not None and self.kind not in KINDS:
            raise DataConfigError(f"alias kind {self.kind!r}; allowed: {', '.join(KINDS)}")
        object.__setattr__(self, "source", src)
        object.__setattr__(self, "target", tgt)

    def applies_to(self, kind: str) -> bool:
        return self.kind is None or self.kind == kind

    def describe(self) -> str:
        return f"{self.kind + ':' if self.kind else ''}{self.source}={self.target}"


def parse_alias(text: str) -> TickerAlias:
    """``SOURCE=TARGET`` or ``KIND:SOURCE=TARGET`` (KIND one of :data:`KINDS`)."""
    scope, colon, rest = text.strip().partition(":")
    kind, body = (scope.strip().lower(), rest) if colon else (None, scope)
    source, eq, target = body.partition("=")
    if not eq or not source.strip() or not target.strip():
        raise DataConfigError(
            f"--alias {text!r}; allowed: SOURCE=TARGET or KIND:SOURCE=TARGET (KIND one of "
            f"{', '.join(KINDS)}), e.g. GOOG=GOOGL or news:GOOG=GOOGL"
        )
    return TickerAlias(source, target, kind)


def check_aliases(aliases: Iterable[TickerAlias]) -> tuple[TickerAlias, ...]:
    """The aliases, if no kind renames one ticker twice and none chains (A=B with B=C)."""
    out = tuple(aliases)
    for kind in KINDS:
        live = [a for a in out if a.applies_to(kind)]
        seen: dict[str, TickerAlias] = {}
        for a in live:
            if a.source in seen:
                raise DataConfigError(
                    f"aliases {seen[a.source].describe()} and {a.describe()} both rename {a.source} in "
                    f"{kind} files; allowed: one target per ticker"
                )
            seen[a.source] = a
        for a in live:
            if a.target in seen:
                raise DataConfigError(
                    f"aliases {a.describe()} and {seen[a.target].describe()} chain in {kind} files; "
                    f"name the final ticker directly ({a.source}={seen[a.target].target})"
                )
    return out


def apply_aliases(
    tickers: np.ndarray, aliases: Sequence[TickerAlias], kind: str
) -> tuple[np.ndarray, dict[str, int]]:
    """``tickers`` (upper-cased, as read) with the aliases of ``kind`` applied, and the number of
    rows renamed per alias (only aliases that renamed something)."""
    live = {a.source: a for a in aliases if a.applies_to(kind)}
    if not live or not len(tickers):
        return tickers, {}
    out = tickers.copy()
    renamed: dict[str, int] = {}
    for src, a in live.items():
        hit = tickers == src
        n = int(hit.sum())
        if n:
            out[hit] = a.target
            renamed[a.describe()] = n
    return out, renamed
