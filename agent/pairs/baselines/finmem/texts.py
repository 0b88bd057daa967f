"""The texts FinMem's memory holds and its prompts show, each passed through the date masking
(:func:`agent.pairs.market.masking.mask_text`) before it is stored.

* news (short layer): ``TICKER: headline. summary``, cut to ``news_max_chars`` in compact mode;
* filings: a 10-Q (mid layer) or a 10-K (long layer) of a leg, as FinMem's data pipeline stores
  them: the management discussion (``mda``: 10-K item 7, 10-Q part I item 2), or the risk
  factors (``risk``), or both (``both``), whole or cut to ``filing_max_chars``;
* company lines of the system prompt, and the query FinMem's retrieval searches with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent.data.schema import Company, Filing, NewsItem
from agent.pairs.baselines.finmem.memory import LAYERS, Retrieved
from agent.pairs.baselines.finmem.observe import Observation, signed

__all__ = [
    "FILING_SECTIONS",
    "FILING_LAYER",
    "cut",
    "news_text",
    "filing_text",
    "company_lines",
    "query_text",
    "memory_payload",
]

#: Which part of a filing is stored: the management discussion, the risk factors, or both.
FILING_SECTIONS = ("mda", "risk", "both")
#: The layer each form enters (FinMem's agent: quarterly reports mid, annual reports long).
FILING_LAYER = {"10-Q": "mid", "10-K": "long"}
_FORM_NAMES = {"10-Q": "quarterly report", "10-K": "annual report"}
_SECTION_NAMES = {"mda": "management discussion", "risk": "risk factors"}


def cut(text: str, n: int) -> str:
    """``text`` with whitespace runs made single spaces, cut to ``n`` characters (0: whole)."""
    t = " ".join(str(text).split())
    return t if not n or len(t) <= n else t[: max(0, n - 3)].rstrip() + "..."


def news_text(item: NewsItem, calendar: Any, max_chars: int) -> str:
    """``TICKER: headline. summary`` with dates masked (the item's own date resolves yearless
    ones), cut to ``max_chars`` (0: whole)."""
    from agent.pairs.market.masking import mask_text

    body = item.headline.strip()
    if item.summary and item.summary.strip() and item.summary.strip() != body:
        body = f"{body.rstrip('.')}. {item.summary.strip()}"
    return cut(f"{item.ticker}: {mask_text(body, calendar, ref_date=item.date)}", max_chars)


def filing_text(filing: Filing, calendar: Any, section: str, max_chars: int) -> str:
    """``TICKER 10-Q (quarterly report), management discussion: ...`` with dates masked (the
    filing's date resolves yearless ones), the section(s) of ``section`` cut to ``max_chars``
    characters together (0: whole). Empty when the filing holds no text of that section."""
    from agent.pairs.market.masking import mask_text

    parts = ("mda", "risk") if section == "both" else (section,)
    texts = [(p, getattr(filing, p) or "") for p in parts]
    texts = [(p, t) for p, t in texts if t.strip()]
    if not texts:
        return ""
    body = " ".join(f"{_SECTION_NAMES[p].capitalize()}: {t}" if len(parts) > 1 else t for p, t in texts)
    what = " and ".join(_SECTION_NAMES[p] for p, _ in texts)
    form = _FORM_NAMES.get(filing.document_type, "filing")
    head = f"{filing.ticker} {filing.document_type} ({form}), {what}: "
    return cut(
        head + mask_text(body, calendar, ref_date=filing.date), max_chars + len(head) if max_chars else 0
    )


def company_lines(
    tickers: Sequence[str], companies: Mapping[str, Company], calendar: Any, max_chars: int
) -> list[str]:
    """``TICKER -- Name: business description`` per leg (masked, cut)."""
    from agent.pairs.market.masking import mask_text

    out = []
    for t in tickers:
        c = companies.get(t)
        if c is None:
            out.append(f"{t} -- no business description available")
            continue
        desc = cut(mask_text(c.description, calendar), max_chars) if c.description and max_chars else ""
        out.append(f"{t} -- {mask_text(c.name, calendar)}" + (f": {desc}" if desc else ""))
    return out


def query_text(a: str, b: str, obs: Observation, character: str) -> str:
    """What today's retrieval searches with: the pair, today's move and the character."""
    mood = character.replace("_", " ")
    return (
        f"{a} versus {b} pair trade, {mood}: {a} {signed(100 * obs.change_a, 2, '%')}, "
        f"{b} {signed(100 * obs.change_b, 2, '%')}, spread z {signed(obs.z_trade)}"
    )


def memory_payload(
    recalled: Mapping[str, Sequence[Retrieved]], label_of: Any
) -> dict[str, list[dict[str, Any]]]:
    """Recalled items per layer as the prompts show them (id, step label, text)."""
    return {
        layer: [{"id": r.uid, "step": label_of(r.step), "text": r.text} for r in recalled.get(layer, ())]
        for layer in LAYERS
    }
