"""The exact-filter lookup over FinTMMBench's corpus (``qa.corpus_lookup = "exact"``): the
authors' ``financial_data_lookup`` (``ft/tool/financial_data_lookup.py``), its rules in our code.

A call names a ``source`` (``stock_price``: ``data/StockPrice.json``; ``news``:
``data/News.json``; ``financial_table``: ``data/FinancialTable.json``) and optionally a
``symbol``, a ``date`` and an ``indicator``; the rows that match every filter given come back
in file order, at most ``top_n`` (default 10), as JSON (``matches``, ``n_returned``,
``n_total_rows``, ``capped``), whole rows as the files hold them, no chart images.

- symbol: upper-cased and matched exactly against the row's ``Symbol`` (a string, a JSON list,
  or a list written out as text, ``"['AMD']"``); a symbol the source lacks gives a hint naming
  the source's ten symbols with the most rows;
- date: ``YYYY-MM-DD`` matches a row whose ``Date`` is it or starts with it, else the row dated
  at the end of that date's calendar quarter; ``A..B`` matches ``A <= Date <= B`` as text;
  ``2022-Q2``, ``2022Q2``, ``Q2 2022`` and ``Q2-2022`` stand for the quarter's last day;
- indicator (``stock_price``, ``financial_table`` only): the row's ``indicator_name``, exactly.

No match gives ``matches: []`` with a hint naming the filters. The hint sentences come from the
``hints`` callable (the authors' words under their loop, :mod:`agent.qa.solver.authors_loop`;
ours otherwise). Nothing here reads a gold answer or an item's sources.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agent.qa.tools.base import ToolResult
from agent.qa.tools.python_tool import extract_numbers
from localfin.errors import InputError

__all__ = ["SOURCES", "FinCorpus", "FinancialDataLookupTool", "our_hints"]

#: the sources and their files under the corpus folder's ``data/``
SOURCES = {"stock_price": "StockPrice.json", "news": "News.json", "financial_table": "FinancialTable.json"}
DEFAULT_TOP_N = 10
_HINT_SYMBOLS = 10
_QUARTER_END = {"Q1": "03-31", "Q2": "06-30", "Q3": "09-30", "Q4": "12-31"}

#: ``hints(kind, fields)``: the hint sentence of ``kind`` (``unknown_source``, ``no_symbol``,
#: ``no_match``, ``symbol``, ``date``, ``indicator``, ``relax``) with its fields
Hints = Callable[[str, Mapping[str, Any]], str]


def our_hints(kind: str, f: Mapping[str, Any]) -> str:
    """The hint sentences in our words."""
    return {
        "unknown_source": f"source {f.get('source')!r} is not one of: stock_price, news, financial_table.",
        "no_symbol": f"No rows for symbol {f.get('sym_norm')!r} in {f.get('source')}; its symbols with the "
        f"most rows: {f.get('#3')}",
        "no_match": f"No rows matched in {f.get('source')}",
        "symbol": f"symbol={f.get('sym_norm')}",
        "date": f"date={f.get('date')}",
        "indicator": f"indicator={f.get('ind_norm')}",
        "relax": ". Check the symbol, the date (YYYY-MM-DD) or drop a filter.",
    }[kind]


def _symbols(raw: Any) -> list[str]:
    if isinstance(raw, list):
        return [str(s).strip().upper() for s in raw if str(s).strip()]
    if isinstance(raw, str) and raw.startswith("[") and raw.endswith("]"):
        try:
            parsed = json.loads(raw.replace("'", '"'))
        except json.JSONDecodeError:
            return []
        return [str(s).strip().upper() for s in parsed if str(s).strip()] if isinstance(parsed, list) else []
    if isinstance(raw, str) and raw.strip():
        return [raw.strip().upper()]
    return []


def _quarter(s: str) -> str:
    norm = s.strip().upper().replace(" ", "")
    m = re.fullmatch(r"(\d{4})-?(Q[1-4])", norm)
    if m:
        return f"{m.group(1)}-{_QUARTER_END[m.group(2)]}"
    m = re.fullmatch(r"(Q[1-4])-?(\d{4})", norm)
    if m:
        return f"{m.group(2)}-{_QUARTER_END[m.group(1)]}"
    return s


def _quarter_end(day: str) -> str | None:
    try:
        y, m, d = map(int, day.strip().split("-"))
        dt.date(y, m, d)
    except (ValueError, OverflowError):
        return None
    return f"{y}-{('03-31', '06-30', '09-30', '12-31')[(m - 1) // 3]}"


def _date_matches(row: Mapping[str, Any], start: str, end: str | None) -> bool:
    day = str(row.get("Date") or "").strip()
    if not day:
        return False
    if end is None:
        if day.startswith(start):
            return True
        q = _quarter_end(start)
        return bool(q and q != start and day.startswith(q))
    return start <= day <= end


class FinCorpus:
    """The three sources' rows and their symbol index (loaded once, read-only)."""

    def __init__(self, folder: Path) -> None:
        data = Path(folder) / "data"
        if not data.is_dir():
            raise InputError(f"no FinTMMBench corpus folder {data} (financial_data_lookup reads it)")
        self.rows: dict[str, list[Mapping[str, Any]]] = {}
        self.index: dict[str, dict[str, list[int]]] = {}
        self.top: dict[str, list[str]] = {}
        for source, name in SOURCES.items():
            f = data / name
            try:
                rows = json.loads(f.read_text(encoding="utf-8")) if f.is_file() else []
            except (OSError, json.JSONDecodeError) as exc:
                raise InputError(f"cannot read FinTMMBench corpus file {f}: {exc}") from exc
            rows = [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
            by: dict[str, list[int]] = {}
            for i, r in enumerate(rows):
                for s in _symbols(r.get("Symbol")):
                    by.setdefault(s, []).append(i)
            self.rows[source], self.index[source] = rows, by
            self.top[source] = [s for s, _ in sorted(by.items(), key=lambda kv: -len(kv[1]))[:_HINT_SYMBOLS]]


class FinancialDataLookupTool:
    """The Tool-protocol face of the exact-filter lookup (module docstring)."""

    name = "financial_data_lookup"
    description = (
        "Rows of FinTMMBench's offline data: daily stock prices (stock_price), news (news) or quarterly "
        "indicators (financial_table), filtered exactly by symbol, date (YYYY-MM-DD, a range A..B, or "
        "a quarter such as 2022-Q2) and indicator name; at most top_n rows (default 10)."
    )
    args_schema: Mapping[str, Any] = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "enum": list(SOURCES)},
            "symbol": {"type": "string"},
            "date": {"type": "string"},
            "indicator": {"type": "string"},
            "top_n": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["source"],
        "additionalProperties": False,
    }

    def __init__(self, corpus: FinCorpus, hints: Hints = our_hints) -> None:
        self.corpus, self.hints = corpus, hints

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        source = str(args.get("source") or "")
        if source not in SOURCES:
            return ToolResult(False, self.hints("unknown_source", {"source": source}), (), "bad_args")
        rows, index = self.corpus.rows[source], self.corpus.index[source]
        symbol = str(args.get("symbol") or "").strip().upper()
        if symbol:
            idx = index.get(symbol, [])
            if not idx:
                top = ", ".join(self.corpus.top[source])
                hint = self.hints("no_symbol", {"sym_norm": symbol, "source": source, "#3": top})
                return ToolResult(True, json.dumps({"matches": [], "hint": hint, "n_total_rows": len(rows)},
                                                   ensure_ascii=False))  # fmt: skip
            candidates = [rows[i] for i in idx]
        else:
            candidates = list(rows)
        date = str(args.get("date") or "")
        if date:
            a, sep, b = date.strip().partition("..")
            start, end = (_quarter(a.strip()), _quarter(b.strip())) if sep else (_quarter(date.strip()), None)
            candidates = [r for r in candidates if _date_matches(r, start, end)]
        indicator = str(args.get("indicator") or "").strip()
        if indicator and source in ("stock_price", "financial_table"):
            candidates = [r for r in candidates if str(r.get("indicator_name", "")).strip() == indicator]
        cap = max(1, int(args.get("top_n") or DEFAULT_TOP_N))
        matches = candidates[:cap]
        if not matches:
            parts = [self.hints("no_match", {"source": source})]
            if symbol:
                parts.append(self.hints("symbol", {"sym_norm": symbol}))
            if date:
                parts.append(self.hints("date", {"date": date}))
            if indicator:
                parts.append(self.hints("indicator", {"ind_norm": indicator}))
            hint = "; ".join(parts) + self.hints("relax", {})
            return ToolResult(True, json.dumps({"matches": [], "hint": hint, "n_total_rows": len(rows)},
                                               ensure_ascii=False))  # fmt: skip
        out = {
            "matches": matches,
            "n_returned": len(matches),
            "n_total_rows": len(rows),
            "capped": len(matches) >= cap,
        }
        text = json.dumps(out, ensure_ascii=False)
        return ToolResult(True, text, extract_numbers(text))

    def close(self) -> None:
        return None
