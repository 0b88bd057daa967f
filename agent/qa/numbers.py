"""Numbers as they are written in financial text: extraction, and the rounding test the answer
gate uses to decide whether a number of an answer is a rounded (or truncated) copy of another.

What is read (one :class:`Number` per match):
- digits with thousands commas and a decimal part: ``1,496.5``, ``.25``, ``12``;
- a sign (``-``, ``+``, the Unicode minus and en dash) or accounting parentheses ``(1,234)``,
  both giving a negative value;
- a currency symbol right before the digits (``$``, ``€``, ``£``, ``¥``), kept as ``currency``;
- a percent marker right after (``%``, ``percent``, ``per cent``): ``percent=True``;
- a scale word right after (``thousand``, ``million``, ``billion``, ``trillion``, ``mn``,
  ``bn``, or one of ``k``/``m``/``b`` glued to the digits): ``multiplier`` 1e3/1e6/1e9/1e12.

Digits glued to a letter on their left (``Q3``, ``FY2019``, ``10-K``'s ``K``) are not read as
a number; the same rule applies to answers and evidence, so the comparison stays fair.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["Number", "extract_numbers", "rounds_to", "SCALE_WORDS", "text_scales"]

#: Scale words and their multipliers (lower case).
SCALE_WORDS: dict[str, float] = {
    "thousand": 1e3,
    "thousands": 1e3,
    "k": 1e3,
    "million": 1e6,
    "millions": 1e6,
    "mn": 1e6,
    "m": 1e6,
    "billion": 1e9,
    "billions": 1e9,
    "bn": 1e9,
    "b": 1e9,
    "trillion": 1e12,
    "trillions": 1e12,
}

_MINUS = "-−–"  # hyphen-minus, Unicode minus, en dash

_NUM = re.compile(
    r"(?<![\w.])"
    r"(?P<open>\()?"
    r"(?P<sign>[-−–+])?"
    r"(?P<cur>[$€£¥])?\s?"
    r"(?P<sign2>[-−–])?"
    r"(?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)"
    r"(?![\d,]*\.\d)"  # no half-read number such as the "1.2" of "1.2.3"
    r"(?P<close>\))?"
    r"(?:\s?(?P<pct>%|percent\b|per\s?cent\b))?"
    r"(?:(?P<word>\s?(?:thousands?|millions?|billions?|trillions?|mn|bn)\b)|(?P<letter>[kKmMbB])\b)?",
    re.IGNORECASE,
)

_SCALE_IN_TEXT = re.compile(r"\b(thousands?|millions?|billions?|trillions?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Number:
    """One number read from text.

    Attributes:
        text: the matched text.
        value: the number as written (sign applied), without the scale word applied.
        decimals: digits shown after the decimal point (the rounding precision).
        percent: a percent marker followed it.
        multiplier: 1 or the value of the scale word that followed it.
        currency: the currency symbol before it, or "".
        start: offset of the match in the text.
    """

    text: str
    value: float
    decimals: int
    percent: bool = False
    multiplier: float = 1.0
    currency: str = ""
    start: int = 0

    @property
    def scaled(self) -> float:
        """``value`` times the scale word's multiplier."""
        return self.value * self.multiplier

    @property
    def is_integer(self) -> bool:
        return self.decimals == 0


def extract_numbers(text: str) -> list[Number]:
    """Every number in ``text``, left to right (see the module docstring for what is read)."""
    out: list[Number] = []
    for m in _NUM.finditer(text):
        body = m.group("body")
        try:
            value = float(body.replace(",", ""))
        except ValueError:
            continue
        if not math.isfinite(value):
            continue
        negative = bool(m.group("open") and m.group("close"))
        for s in (m.group("sign"), m.group("sign2")):
            if s and s in _MINUS:
                negative = True
        decimals = len(body.split(".", 1)[1]) if "." in body else 0
        word = (m.group("word") or m.group("letter") or "").strip().lower()
        mult = SCALE_WORDS.get(word, 1.0)
        pct = bool(m.group("pct"))
        if pct and m.group("letter"):  # "5%m" is not a scale; keep the percent only
            mult = 1.0
        out.append(
            Number(
                text=m.group(0).strip(),
                value=-value if negative else value,
                decimals=decimals,
                percent=pct,
                multiplier=mult,
                currency=m.group("cur") or "",
                start=m.start(),
            )
        )
    return out


def text_scales(text: str) -> set[float]:
    """Multipliers of the scale words a text mentions anywhere (``in thousands`` headers)."""
    return {SCALE_WORDS[w.lower()] for w in _SCALE_IN_TEXT.findall(text)}


def rounds_to(evidence: float, shown: float, decimals: int) -> bool:
    """True when ``evidence``, rounded half-up or truncated to ``decimals`` places, is ``shown``.

    Absolute values are compared (a decrease is often written as a positive number with a
    word). A relative slack of 1e-9 absorbs binary floating-point error.
    """
    e, a = abs(evidence), abs(shown)
    unit = 10.0 ** (-decimals)
    slack = 1e-9 * max(1.0, e, a)
    if abs(e - a) <= 0.5 * unit + slack:  # rounding (either direction at the half)
        return True
    return a - slack <= e < a + unit + slack  # truncation toward zero
