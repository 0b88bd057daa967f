"""Reading numbers the way financial answers write them.

One parser for scorers, loaders and (through :func:`find_numbers`) the answer gate, so that
"1,234.5", "(12.3)", "-0.2", "12.3%", "$4.5 million", "4.5m", "US$ 2bn" and "1.2e6" all mean
the same thing everywhere. A :class:`ParsedNumber` keeps what was written apart from what it
means: ``value`` is the number as written (sign applied, scale word *not* applied, percent
*not* divided by 100), ``scale`` the scale word it carried and ``percent`` whether it carried a
percent sign or word. :attr:`ParsedNumber.scaled` applies the scale word.

Rules (each has a test in tests/agent/qa/test_qa_numbers.py):
* thousands separators are commas in groups of three ("1,234,567"); a comma elsewhere ends
  the number ("1,23" is the number 1 followed by text);
* a number wrapped in parentheses is negative (accounting style: "(12.3)" = -12.3, also
  "($12.3)" and "$(12.3)"); a leading "-", "−" (U+2212) or "–" (U+2013) is a minus sign;
* currency marks before the number ($ € £ ¥, US$, USD, RMB, CNY, EUR, GBP) are recorded and
  otherwise ignored;
* scale words after the number: thousand / k, million / m / mn / mm, billion / b / bn,
  trillion / t / tn (a single letter only when no letter follows it, so "12 months" is 12);
  "%", "percent", "per cent" and "pct" mark a percentage;
* Chinese units 万 (1e4) and 亿 (1e8) are read as scale words ``wan`` / ``yi``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["SCALE_FACTORS", "ParsedNumber", "parse_number", "find_numbers", "format_number"]

#: Multiplier of each scale word a number may carry.
SCALE_FACTORS: dict[str, float] = {
    "": 1.0,
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
    "wan": 1e4,
    "yi": 1e8,
}

_SCALE_WORDS = {
    "thousand": "thousand",
    "thousands": "thousand",
    "k": "thousand",
    "million": "million",
    "millions": "million",
    "mn": "million",
    "mm": "million",
    "m": "million",
    "mil": "million",
    "billion": "billion",
    "billions": "billion",
    "bn": "billion",
    "b": "billion",
    "trillion": "trillion",
    "trillions": "trillion",
    "tn": "trillion",
    "t": "trillion",
    "万": "wan",
    "亿": "yi",
}

_CURRENCY = r"(?:US\$|HK\$|A\$|C\$|\$|€|£|¥|￥|USD|RMB|CNY|EUR|GBP|JPY|HKD)"
_DIGITS = r"(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
_SCALE = r"(?:thousands?|millions?|billions?|trillions?|mil|mn|mm|bn|tn|[kmbt])(?![A-Za-z])|万|亿"
_PCT = r"(?:%|％|\s?(?:percent|per\s+cent|pct)(?![A-Za-z]))"

# sign, currency, "(", currency, digits, ")", percent or scale (scale may be followed by %)
_NUMBER_RE = re.compile(
    rf"""
    (?P<sign>[-+−–])?\s*
    (?P<cur1>{_CURRENCY})?\s*
    (?P<sign2>[-−–])?\s*
    (?P<open>\()?\s*
    (?P<cur2>{_CURRENCY})?\s*
    (?P<sign3>[-−–])?
    (?P<digits>{_DIGITS})
    (?![\d,]\d)
    \s*(?P<close>\))?
    (?:\s*(?P<scale>{_SCALE}))?
    (?:\s*(?P<pct>{_PCT}))?
    """,
    re.VERBOSE | re.IGNORECASE,
)

_FILLER = re.compile(
    r"^(?:the\s+)?(?:answer\s+is|answer:|approximately|approx\.?|about|around|roughly|~|≈|=)\s*",
    re.IGNORECASE,
)
_TRAILING_UNITS = re.compile(
    r"\s*(?:dollars?|usd|us dollars|euros?|yuan|rmb|shares|units|times|x)\s*\.?$", re.IGNORECASE
)


@dataclass(frozen=True)
class ParsedNumber:
    """One number read from text.

    Attributes:
        value: the number as written, sign applied (scale word not applied, percent not divided).
        scale: key of :data:`SCALE_FACTORS` ("" when none was written).
        percent: True when a percent sign or word followed the number.
        currency: the currency mark written before it ("" when none).
        text: the matched text.
    """

    value: float
    scale: str = ""
    percent: bool = False
    currency: str = ""
    text: str = ""

    @property
    def scaled(self) -> float:
        """The value with its scale word applied (a percentage stays in percent units)."""
        return self.value * SCALE_FACTORS[self.scale]


def _from_match(m: re.Match[str], *, range_dash: bool = False) -> ParsedNumber | None:
    """``range_dash``: the leading sign is a dash between two numbers ("2018-2019"), not a minus."""
    digits = m.group("digits").replace(",", "")
    try:
        value = float(digits)
    except ValueError:
        return None
    if not math.isfinite(value):
        return None
    signs = ("sign2", "sign3") if range_dash else ("sign", "sign2", "sign3")
    negative = any(m.group(g) in ("-", "−", "–") for g in signs)
    if m.group("open") and m.group("close"):
        negative = True  # accounting style; an unbalanced parenthesis belongs to the text
    scale_raw = (m.group("scale") or "").strip().lower()
    scale = _SCALE_WORDS.get(scale_raw, _SCALE_WORDS.get(scale_raw.rstrip("s"), "")) if scale_raw else ""
    currency = (m.group("cur1") or m.group("cur2") or "").upper()
    return ParsedNumber(
        value=-value if negative else value,
        scale=scale,
        percent=bool(m.group("pct")),
        currency=currency,
        text=m.group(0).strip(),
    )


def find_numbers(text: str) -> list[ParsedNumber]:
    """Every number in free text, in order (years and dates come out as plain numbers)."""
    out: list[ParsedNumber] = []
    for m in _NUMBER_RE.finditer(text or ""):
        start = m.start("digits")
        # one or two digits glued to letters before them name something ("Q4", "A1", "H2");
        # longer runs are read ("Cost789.01": OCR drops spaces, "FY2019")
        glued = start > 0 and text[start - 1].isalpha() and not m.group("cur1") and not m.group("cur2")
        if glued and re.fullmatch(r"\d{1,2}", m.group("digits")):
            continue
        dash = bool(m.group("sign")) and m.start() > 0 and text[m.start() - 1].isalnum()
        parsed = _from_match(m, range_dash=dash)
        if parsed is not None:
            out.append(parsed)
    return out


def parse_number(text: str | float | int | None) -> ParsedNumber | None:
    """The single number an answer string states, or None.

    Accepts ints and floats as they are. A string must hold exactly one number, optionally
    with currency, scale, percent, a leading "approximately"/"the answer is" and a trailing
    unit word ("dollars", "shares"); anything else (two numbers, words around a number)
    gives None, so a scorer never guesses which number of a sentence was meant.
    """
    if text is None or isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return ParsedNumber(float(text)) if math.isfinite(float(text)) else None
    s = str(text).strip().rstrip(".").strip()
    s = s.replace("\u00a0", " ").replace("，", ",")
    s = _FILLER.sub("", s)
    s = _TRAILING_UNITS.sub("", s).strip()
    if not s:
        return None
    m = _NUMBER_RE.fullmatch(s)
    if m is None:
        return None
    return _from_match(m)


def format_number(value: float, decimals: int | None = None) -> str:
    """Plain text of a number: fixed ``decimals`` if given, else the shortest exact form."""
    if decimals is not None:
        return f"{value:.{decimals}f}"
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))
