"""Company descriptions without financial results (paper A.1: the company context is "limited to
its main business; undated financial results are excluded").

The rule (``[prompt] description_filter = "financial_results"``): a description is cut into
sentences (at ``.``, ``!`` or ``?`` followed by a space and a capital letter or a digit, so that
"Apple Inc. was founded" stays one sentence), and a sentence is left out when it states a
financial result:

* it names the market capitalization (``market capitalization``, ``market cap``), with or
  without a figure ("one of the top REITs by market capitalization"), or
* it names a result (revenue(s), net sales, sales of, in sales, net income, net loss,
  earnings, profit(s), EBITDA, operating income, cash flow, total assets, assets under
  management / administration / custody, AUM, backlog, book value, dividend(s)) and holds a
  figure: a currency amount (``$1.2``, ``€5``, ``10 USD``), a number with ``million``,
  ``billion`` or ``trillion``, a percentage, or a record count ("for 56 consecutive years",
  "644 consecutive monthly dividends").

Everything else stays, figures of the business included: "serves 3.5 million customers", "a
fleet of 965 aircraft", "53.3 million square feet", "at the fixed price of $ 1.25" (a price,
not a result), "invests between $0.25 million and $900 million per transaction" (a mandate), "market value
appraisals" (a service), "not-for-profit organizations", "dividends that increase over time"
(a policy, no figure).
A result carrying a date is left out too: once the masking helper hides its date (every text a
model sees is masked) it reads as undated. ``none`` keeps the description as it is. The test on
the real S&P 500 companies file lists what the rule removes there
(``tests/agent/pairs/test_pairs_descriptions.py``).
"""

from __future__ import annotations

import re

from localfin.errors import ConfigError

__all__ = ["DESCRIPTION_FILTERS", "split_sentences", "states_financial_result", "filter_description"]

#: Values of ``[prompt] description_filter``.
DESCRIPTION_FILTERS = ("financial_results", "none")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9])")
_MARKET_VALUE = re.compile(r"\bmarket\s+(?:capitali[sz]ation|cap)\b", re.IGNORECASE)
_RESULT = re.compile(
    r"\b(?:revenues?|net\s+sales|sales\s+of|in\s+sales|net\s+income|net\s+loss|earnings|profits?|"
    r"ebitda|operating\s+income|cash\s+flows?|total\s+assets|assets\s+under\s+"
    r"(?:management|administration|custody)|aum|backlog|book\s+value|dividends?)\b",
    re.IGNORECASE,
)
_FIGURE = re.compile(
    r"[$€£¥]\s?\d|\b\d[\d,.]*\s*(?:usd|eur|dollars)\b|\b\d[\d,.]*\s*(?:million|billion|trillion)\b"
    r"|\b\d[\d,.]*\s?%|\b\d[\d,]*\s+consecutive\b",
    re.IGNORECASE,
)


def split_sentences(text: str) -> list[str]:
    """``text`` cut into sentences (module docstring), whitespace kept inside each."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s]


def states_financial_result(sentence: str) -> bool:
    """Whether ``sentence`` states a financial result (module docstring)."""
    if _MARKET_VALUE.search(sentence):
        return True
    return bool(_RESULT.search(sentence) and _FIGURE.search(sentence))


def filter_description(text: str, rule: str) -> tuple[str, tuple[str, ...]]:
    """``(kept text, removed sentences)`` of a business description under ``rule``
    (:data:`DESCRIPTION_FILTERS`); a description without a financial result comes back as it
    is."""
    if rule not in DESCRIPTION_FILTERS:
        raise ConfigError(f"prompt.description_filter={rule!r}; allowed: {', '.join(DESCRIPTION_FILTERS)}")
    if rule == "none" or not text:
        return text, ()
    kept, removed = [], []
    for s in split_sentences(text):
        (removed if states_financial_result(s) else kept).append(s)
    return (" ".join(kept) if removed else text), tuple(removed)
