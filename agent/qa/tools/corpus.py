"""FinTMMBench's Grounded Data Retrieval: a deterministic search over the benchmark's own corpus.

FinTMMBench is a retrieval benchmark: its questions come without context, and the evidence
lies in the corpus the benchmark ships beside ``QA.json`` (see :mod:`agent.qa.loaders.fintmm`):
``data/StockPrice.json``, ``data/FinancialTable.json``, ``data/News.json`` (JSON arrays of
rows, each with a ``uuid``) and ``data/Chart/<TICKER>_<PERIOD>_Kline.png`` candlestick charts
(``PERIOD`` ``2022-W10``: an ISO week; ``2022-M10``: a month). The row fields are read by
name, case-insensitively, as the generation prompts name them: ``Symbol``/``Ticker``,
``Company``, ``Date`` (its first ten characters, ``YYYY-MM-DD``); every other field is
rendered as ``key: value`` text. A row may name several symbols: the released ``News.json``
carries ``Symbol`` as a JSON list (``["AMD", "INTC"]``), and a list written out as text
(``"['AMD']"``, as some dumps of it hold) is read as that list; a plain string is one symbol.
A row without a date has none (a date filter then excludes it); a file that is absent is left
out and named by :meth:`Corpus.describe`.

:class:`Corpus` scores documents against a query with BM25 (k1 = 1.2, b = 0.75) over lower-case
alphanumeric tokens of the rendered text, the symbol and the company name, after the filters
(symbol: one of the document's tickers or a word of its company name; dates: the document's day or
chart period overlaps ``[start_date, end_date]``; kind). Ties are broken by load order (files
in the order above, rows in file order, charts by file name), so a query always returns the
same documents in the same order. Nothing here reads a gold answer or an item's sources.

:class:`RetrieveTool` is the Tool-protocol face (``retrieve``) for questions of a benchmark that
ships such a corpus. A chart in the results is listed, and its image path is handed back in
:attr:`ToolResult.images`, which the solver attaches to its next message for a model that
takes images (:class:`agent.qa.solver.react.QASolver`).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.tools.base import ToolResult
from agent.qa.tools.python_tool import extract_numbers
from localfin.errors import InputError

__all__ = ["CORPUS_FILES", "KINDS", "CorpusDoc", "Corpus", "RetrieveTool", "corpus_root"]

log = logging.getLogger(__name__)

#: Corpus files and the document kind each holds.
CORPUS_FILES = (("StockPrice.json", "price"), ("FinancialTable.json", "table"), ("News.json", "news"))
KINDS = ("price", "table", "news", "chart")
_CHART_DIR = "Chart"
_CHART = re.compile(r"^([A-Za-z0-9.\-]+)_(\d{4})-([WM])(\d{1,2})_Kline$")
_TOKEN = re.compile(r"[a-z0-9]+")
_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
_SYMBOL_KEYS = ("symbol", "ticker", "stock", "stock_symbol")
_COMPANY_KEYS = ("company", "company_name", "name")
_DATE_KEYS = ("date", "published", "published_date", "publish_date", "time", "datetime")
_UUID_KEYS = ("uuid", "id")
#: characters of a row kept as its text (indexed, and shown cut to ``SHOWN_CHARS``)
TEXT_CHARS = 4000
#: characters of one result's text shown to the model
SHOWN_CHARS = 400
#: most results one call may ask for
MAX_K = 10
_K1, _B = 1.2, 0.75


@dataclass(frozen=True)
class CorpusDoc:
    """One corpus document: a row of a corpus file or a chart image.

    Attributes:
        uuid: the row's ``uuid`` (a chart: its file stem), as the benchmark's sources cite it.
        kind: one of :data:`KINDS`.
        symbols: its upper-case tickers (empty when the row names none; a news row may name
            several).
        company: company name ("" when none).
        start / end: the row's day (start == end) or the chart's period; None: undated.
        text: the row rendered as ``key: value`` pairs (a chart: what it shows).
        path: the chart's image file ("" for rows).
    """

    uuid: str
    kind: str
    symbols: tuple[str, ...]
    company: str
    start: dt.date | None
    end: dt.date | None
    text: str
    path: str = ""

    @property
    def symbol(self) -> str:
        """The tickers as shown: comma-separated ("" for none)."""
        return ",".join(self.symbols)

    def line(self, shown_chars: int = SHOWN_CHARS) -> str:
        """How one result is shown: kind, day or period, symbol, uuid, then the text (cut to
        ``shown_chars``)."""
        when = "" if self.start is None else str(self.start)
        if self.end is not None and self.end != self.start:
            when += f"..{self.end}"
        head = " ".join(x for x in (self.kind, when, self.symbol) if x)
        body = self.text if len(self.text) <= shown_chars else self.text[: shown_chars - 3] + "..."
        return f"{head} (uuid {self.uuid}): {body}"


def _field(row: Mapping[str, Any], keys: Sequence[str]) -> str:
    lower = {str(k).lower().replace(" ", "_"): v for k, v in row.items()}
    for k in keys:
        v = lower.get(k)
        if isinstance(v, (list, tuple)):  # a list-valued field (a news row's companies): joined
            v = ", ".join(str(x).strip() for x in v if str(x).strip())
        if v not in (None, ""):
            return str(v).strip()
    return ""


def _symbols(row: Mapping[str, Any]) -> tuple[str, ...]:
    """The row's tickers: a JSON list, a list written out as text, or one string."""
    lower = {str(k).lower().replace(" ", "_"): v for k, v in row.items()}
    raw = next((lower[k] for k in _SYMBOL_KEYS if lower.get(k) not in (None, "", [])), None)
    if isinstance(raw, str) and raw.strip().startswith("[") and raw.strip().endswith("]"):
        try:
            raw = json.loads(raw.replace("'", '"'))
        except json.JSONDecodeError:
            raw = [x.strip(" '\"") for x in raw.strip()[1:-1].split(",")]
    values = raw if isinstance(raw, (list, tuple)) else [] if raw is None else [raw]
    return tuple(dict.fromkeys(str(v).strip().upper() for v in values if str(v).strip()))


def _day(text: str) -> dt.date | None:
    m = _ISO.match(text.replace("/", "-"))
    if not m:
        return None
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return None


def _render(row: Mapping[str, Any], skip: Iterable[str], text_chars: int) -> str:
    skip = {s.lower() for s in skip}
    parts = []
    for k, v in row.items():
        if str(k).lower() in skip or v in (None, "", [], {}):
            continue
        value = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
        parts.append(f"{k}: {value}")
    text = "; ".join(parts)
    return text[:text_chars]


def _chart_period(year: int, unit: str, number: int) -> tuple[dt.date, dt.date] | None:
    try:
        if unit == "W":
            return dt.date.fromisocalendar(year, number, 1), dt.date.fromisocalendar(year, number, 7)
        first = dt.date(year, number, 1)
        nxt = dt.date(year + (number == 12), number % 12 + 1, 1)
        return first, nxt - dt.timedelta(days=1)
    except ValueError:
        return None


def corpus_root(path: Path) -> Path:
    """The folder holding the corpus files: ``path/data`` when it exists (the benchmark's
    folder, or the folder of its ``QA.json``), else ``path`` itself."""
    base = path.parent if path.is_file() else path
    return base / "data" if (base / "data").is_dir() else base


def _rows(file: Path) -> list[Any]:
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read FinTMMBench corpus file {file}: {exc}") from exc
    if isinstance(data, Mapping):
        data = data.get("data", data.get("rows", []))
    if not isinstance(data, list):
        kind = type(data).__name__
        raise InputError(f"FinTMMBench corpus file {file} holds a JSON {kind}, expected a list")
    return data


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class Corpus:
    """The documents of one benchmark corpus and a BM25 index over them (built once, read only).

    Use :meth:`load` for a benchmark folder or :meth:`from_docs` for documents built in code.
    """

    def __init__(
        self, docs: Sequence[CorpusDoc], root: Path | None = None, files: Sequence[str] = ()
    ) -> None:
        self.docs = tuple(docs)
        self.root = root
        self.files = tuple(files)
        self._postings: dict[str, list[tuple[int, int]]] = {}
        self._lengths: list[int] = []
        for i, d in enumerate(self.docs):
            toks = _tokens(" ".join((d.text, d.symbol, d.company)))
            self._lengths.append(len(toks))
            counts: dict[str, int] = {}
            for t in toks:
                counts[t] = counts.get(t, 0) + 1
            for t, c in counts.items():
                self._postings.setdefault(t, []).append((i, c))
        self._avg = (sum(self._lengths) / len(self._lengths)) if self._lengths else 0.0

    @classmethod
    def from_docs(cls, docs: Sequence[CorpusDoc]) -> Corpus:
        return cls(docs)

    @classmethod
    def load(cls, path: str | Path, text_chars: int = TEXT_CHARS) -> Corpus:
        """The corpus under ``path`` (the benchmark folder, its ``QA.json`` or its ``data/``),
        each row's text cut to ``text_chars`` characters.

        Raises:
            InputError: nothing of the corpus is there, or a file cannot be read.
        """
        root = corpus_root(Path(path))
        docs: list[CorpusDoc] = []
        found: list[str] = []
        for name, kind in CORPUS_FILES:
            f = root / name
            if not f.is_file():
                continue
            found.append(name)
            for i, row in enumerate(_rows(f)):
                if not isinstance(row, Mapping):
                    continue
                uuid = _field(row, _UUID_KEYS) or f"{kind}-{i}"
                day = _day(_field(row, _DATE_KEYS))
                docs.append(
                    CorpusDoc(
                        uuid=uuid,
                        kind=kind,
                        symbols=_symbols(row),
                        company=_field(row, _COMPANY_KEYS),
                        start=day,
                        end=day,
                        text=_render(row, _UUID_KEYS, text_chars),
                    )
                )
        charts = root / _CHART_DIR
        if charts.is_dir():
            found.append(f"{_CHART_DIR}/")
            for f in sorted(charts.glob("*.png")):
                m = _CHART.match(f.stem)
                if not m:
                    continue
                sym, year, unit, num = m.group(1).upper(), int(m.group(2)), m.group(3), int(m.group(4))
                period = _chart_period(year, unit, num)
                what = "weekly" if unit == "W" else "monthly"
                text = f"{sym} {what} candlestick (K-line) chart {year}-{unit}{num}"
                if period:
                    text += f", {period[0]}..{period[1]}"
                docs.append(
                    CorpusDoc(f.stem, "chart", (sym,), "", *(period or (None, None)), text=text, path=str(f))
                )
        if not found:
            raise InputError(
                f"no FinTMMBench corpus under {root}: expected "
                + ", ".join(n for n, _ in CORPUS_FILES)
                + f" or {_CHART_DIR}/ (the benchmark's data/ folder)"
            )
        log.info("FinTMMBench corpus %s: %d documents from %s", root, len(docs), ", ".join(found))
        return cls(docs, root, found)

    def describe(self) -> str:
        counts = {k: sum(d.kind == k for d in self.docs) for k in KINDS}
        return f"{len(self.docs)} documents (" + ", ".join(f"{k} {n}" for k, n in counts.items()) + ")"

    def _keep(self, d: CorpusDoc, symbol: str, start: dt.date | None, end: dt.date | None, kind: str) -> bool:
        if kind and d.kind != kind:
            return False
        if symbol and symbol not in d.symbols and symbol.lower() not in _tokens(d.company):
            return False
        if start is not None or end is not None:
            if d.start is None or d.end is None:
                return False
            if start is not None and d.end < start:
                return False
            if end is not None and d.start > end:
                return False
        return True

    def search(
        self,
        query: str,
        *,
        symbol: str = "",
        start: dt.date | None = None,
        end: dt.date | None = None,
        kind: str = "",
        k: int = 5,
    ) -> tuple[list[tuple[CorpusDoc, float]], int]:
        """The ``k`` best documents for ``query`` among those passing the filters, with their
        BM25 scores, and how many documents passed the filters."""
        keep = [self._keep(d, symbol.upper(), start, end, kind) for d in self.docs]
        n = len(self.docs)
        scores = [0.0] * n
        for t in dict.fromkeys(_tokens(query)):
            post = self._postings.get(t, ())
            if not post:
                continue
            idf = math.log(1.0 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for i, tf in post:
                if keep[i]:
                    norm = tf + _K1 * (1.0 - _B + _B * self._lengths[i] / (self._avg or 1.0))
                    scores[i] += idf * tf * (_K1 + 1.0) / norm
        passing = [i for i in range(n) if keep[i]]
        ranked = sorted(passing, key=lambda i: (-scores[i], i))[:k]
        return [(self.docs[i], round(scores[i], 6)) for i in ranked], len(passing)


_DATE = r"^\d{4}-\d{2}-\d{2}$"


class RetrieveTool:
    """Search the benchmark's corpus (Tool protocol); shares one loaded :class:`Corpus`."""

    name = "retrieve"
    description = (
        "Search the benchmark's data (news, financial tables, daily stock prices, candlestick charts): "
        "query words, optional symbol, start_date/end_date (YYYY-MM-DD), kind (news, table, price, "
        "chart), k results (1-10)."
    )
    args_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 200},
            "symbol": {"type": "string", "maxLength": 40},
            "start_date": {"type": "string", "pattern": _DATE, "maxLength": 10},
            "end_date": {"type": "string", "pattern": _DATE, "maxLength": 10},
            "kind": {"type": "string", "enum": list(KINDS)},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K},
        },
        "required": ["query"],
        "additionalProperties": False,
    }

    def __init__(self, corpus: Corpus, *, shown_chars: int = SHOWN_CHARS, max_k: int = MAX_K) -> None:
        self.corpus = corpus
        self.shown_chars, self.max_k = shown_chars, max_k
        if max_k != MAX_K:
            k = {"type": "integer", "minimum": 1, "maximum": max_k}
            props = {**self.args_schema["properties"], "k": k}
            self.args_schema = {**self.args_schema, "properties": props}
            self.description = self.description.replace("(1-10)", f"(1-{max_k})")

    def close(self) -> None:
        """Nothing per question to release (the corpus is shared)."""

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        if not isinstance(args, Mapping):
            return ToolResult(False, "arguments must be an object", error="bad_args")
        allowed = set(self.args_schema["properties"])
        extra = sorted(set(args) - allowed)
        if extra:
            names = ", ".join(sorted(allowed))
            return ToolResult(False, f"unknown argument(s) {extra}; allowed: {names}", error="bad_args")
        query = args.get("query")
        if not isinstance(query, str) or not query.strip():
            return ToolResult(False, f"query={query!r}; allowed: a non-empty string", error="bad_args")
        kind = args.get("kind", "") or ""
        if kind not in ("", *KINDS):
            return ToolResult(False, f"kind={kind!r}; allowed: {', '.join(KINDS)}", error="bad_args")
        k = args.get("k", min(5, self.max_k))
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= self.max_k:
            return ToolResult(False, f"k={k!r}; allowed: a whole number 1..{self.max_k}", error="bad_args")
        symbol = args.get("symbol", "") or ""
        if not isinstance(symbol, str):
            text = f"symbol={symbol!r}; allowed: a ticker or a word of the company name"
            return ToolResult(False, text, error="bad_args")
        dates = []
        for key in ("start_date", "end_date"):
            raw = args.get(key)
            day = None if raw in (None, "") else _day(str(raw)) if re.match(_DATE, str(raw)) else None
            if raw not in (None, "") and day is None:
                return ToolResult(False, f"{key}={raw!r}; allowed: a date YYYY-MM-DD", error="bad_args")
            dates.append(day)
        start, end = dates
        if start is not None and end is not None and start > end:
            return ToolResult(False, f"start_date={start} is after end_date={end}", error="bad_args")
        hits, passing = self.corpus.search(query, symbol=symbol.strip(), start=start, end=end, kind=kind, k=k)
        if not hits:
            return ToolResult(True, f"no document matches (0 of {len(self.corpus.docs)} pass the filters)")
        lines = [f"{len(hits)} of {passing} matching documents:"]
        lines += [f"[{i}] {d.line(self.shown_chars)}" for i, (d, _) in enumerate(hits, 1)]
        charts = tuple(d.path for d, _ in hits if d.kind == "chart" and d.path)
        text = "\n".join(lines)
        return ToolResult(True, text, numbers=extract_numbers(text), images=charts)
