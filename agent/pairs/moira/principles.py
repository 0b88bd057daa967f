"""The transferable-principle rule of policy memory, enforced in code.

A training reflection proposes 1-3 principles. A principle is kept only if it could transfer to
another pair and another window, so code rejects one that names:

* ``ticker``: a ticker of the pool (whole word, case-sensitive: ``KO`` but not ``ko``);
* ``company``: a company name of the pool (case-insensitive; the full name or the name without
  corporate suffixes such as "Inc." or "Company");
* ``pair``: a pair written as ``XXX/YYY`` or ``XXX-YYY`` of upper-case symbols;
* ``date``: a calendar date, weekday, month name or year (the masking module's leak scan);
* ``step``: a step number or label (``step 012``, ``step XXX``, ``day 5``, ``session 3``);
* ``direction``: a recommendation of a fixed direction (paper A.3 forbids "a specific
  LONG_SHORT/SHORT_LONG recommendation"): a sentence that names ``LONG_SHORT`` or
  ``SHORT_LONG`` (any spelling with ``_``, ``-`` or a space) and states no condition, i.e. holds
  neither a condition word (if, when, unless, only, ...) nor an observable the direction would
  depend on (spread, z-score, price move, news, memory, above/below, ...). "Choose SHORT_LONG
  when the spread is far above its mean" is kept; "Prefer LONG_SHORT" is rejected. With
  ``direction_rule = "any_mention"`` every mention of either direction is rejected (the
  stricter reading);

and, for hygiene, an ``empty`` principle, one ``too_short`` to state a condition and an action
(fewer than ``min_words`` words or ``min_chars`` characters), one ``too_long`` for its field, or a
``duplicate`` of another kept principle. The rules are checked in the order above; the first
broken one is recorded with the principle (training.json keeps every rejected principle and its
rule). ``rules`` names the rules that apply (``empty`` always does; the settings
``policy.principle_rules``, ``policy.principle_min_words`` and ``prompt.principle_min_chars``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from agent.pairs.market.masking import contains_calendar_leak

__all__ = ["RULES", "PrincipleCheck", "PrincipleValidator"]

RULES = (
    "empty",
    "too_short",
    "too_long",
    "ticker",
    "company",
    "pair",
    "date",
    "step",
    "direction",
    "duplicate",
)

_SUFFIXES = re.compile(
    r"[,.]?\s+(inc|incorporated|corp|corporation|company|co|ltd|limited|plc|holdings|group|"
    r"the)\.?$",
    re.IGNORECASE,
)
_PAIR_TEXT = re.compile(r"\b[A-Z][A-Z0-9.]{1,5}\s*[/\-]\s*[A-Z][A-Z0-9.]{1,5}\b")
_STEP = re.compile(r"\b(step|day|session)\s*[-#]?\s*(\d+|x{2,3})\b", re.IGNORECASE)
_DIRECTION = re.compile(r"\b(long|short)[\s_\-]+(short|long)\b", re.IGNORECASE)
_SENTENCES = re.compile(r"(?<=[.;!?])\s+|\n+")
#: what makes a sentence naming a direction a conditional rule rather than a fixed recommendation
_CONDITION = re.compile(
    r"\b(if|when|whenever|unless|while|once|only|after|before|until|provided|given|where|whether|"
    r"during|depending|spread|z|z-scores?|zscores?|deviation|reversion|revert\w*|diverg\w*|"
    r"above|below|exceeds?|greater|less|higher|lower|positive|negative|rich|cheap|news|delta|"
    r"price|prices|moves?|momentum|memory|trend\w*|signal\w*|evidence|half-life|correlation)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"\b(19|20)\d\d\b")


def _plain_name(name: str) -> str:
    out = name.strip()
    out = re.sub(r"^the\s+", "", out, flags=re.IGNORECASE)
    prev = None
    while prev != out:
        prev = out
        out = _SUFFIXES.sub("", out).strip()
    return out


@dataclass(frozen=True)
class PrincipleCheck:
    """One proposed principle and the verdict: ``rule`` is the first rule it broke (None: kept)."""

    text: str
    rule: str | None

    @property
    def ok(self) -> bool:
        return self.rule is None


class PrincipleValidator:
    """Checks principles against the pool's tickers and company names.

    Args:
        tickers: every ticker the agent can see (the pool).
        company_names: their company names (ticker -> name).
        max_chars: the longest principle accepted (0: no length rule).
        min_words: the fewest words a principle may have.
        min_chars: the fewest characters a principle may have (0: none).
        direction_rule: ``recommendation`` (reject a fixed-direction recommendation) or
            ``any_mention`` (reject any mention of a direction); module docstring.
        rules: the rules that apply (default: every one of :data:`RULES`; ``empty`` always).
    """

    def __init__(
        self,
        tickers: Iterable[str],
        company_names: Mapping[str, str],
        *,
        max_chars: int,
        min_words: int = 4,
        min_chars: int = 0,
        direction_rule: str = "recommendation",
        rules: Iterable[str] = RULES,
    ) -> None:
        self.tickers = sorted({t for t in tickers if t}, key=len, reverse=True)
        names: set[str] = set()
        for t, n in company_names.items():
            for variant in (n.strip(), _plain_name(n)):
                if len(variant) >= 3 and variant != t:
                    names.add(variant.lower())
        self.names = sorted(names, key=len, reverse=True)
        self.max_chars = max_chars
        self.min_words = min_words
        self.min_chars = min_chars
        self.direction_rule = direction_rule
        self.rules = frozenset(rules) | {"empty"}
        self._ticker_re = (
            re.compile(
                r"(?<![A-Za-z0-9])(" + "|".join(re.escape(t) for t in self.tickers) + r")(?![A-Za-z0-9])"
            )
            if self.tickers
            else None
        )

    def rule_broken(self, text: str) -> str | None:
        """The first rule ``text`` breaks, or None."""

        body = " ".join(str(text).split())
        if not body:
            return "empty"
        low = body.lower()
        tests = (
            ("too_short", lambda: len(body.split()) < self.min_words or len(body) < self.min_chars),
            ("too_long", lambda: bool(self.max_chars) and len(body) > self.max_chars),
            ("ticker", lambda: self._ticker_re is not None and bool(self._ticker_re.search(body))),
            (
                "company",
                lambda: any(
                    re.search(r"(?<![a-z0-9])" + re.escape(n) + r"(?![a-z0-9])", low) for n in self.names
                ),
            ),
            ("pair", lambda: bool(_PAIR_TEXT.search(body))),
            ("date", lambda: contains_calendar_leak(body) or bool(_YEAR.search(body))),
            ("step", lambda: bool(_STEP.search(body))),
            ("direction", lambda: self._fixed_direction(body)),
        )
        for rule, broken in tests:
            if rule in self.rules and broken():
                return rule
        return None

    def _fixed_direction(self, body: str) -> bool:
        """The ``direction`` rule (module docstring)."""
        if self.direction_rule == "any_mention":
            return bool(_DIRECTION.search(body))
        for sentence in _SENTENCES.split(body):
            if _DIRECTION.search(sentence) and not _CONDITION.search(_DIRECTION.sub(" ", sentence)):
                return True
        return False

    def check(self, principles: Sequence[str], *, keep: Sequence[str] = ()) -> list[PrincipleCheck]:
        """Verdicts for ``principles`` in order; a principle equal (ignoring case and spacing) to
        one in ``keep`` or to an earlier accepted one is a ``duplicate``."""
        seen = {" ".join(k.lower().split()) for k in keep}
        out = []
        for p in principles:
            rule = self.rule_broken(p)
            norm = " ".join(str(p).lower().split())
            if rule is None and norm in seen and "duplicate" in self.rules:
                rule = "duplicate"
            if rule is None:
                seen.add(norm)
            out.append(PrincipleCheck(" ".join(str(p).split()), rule))
        return out
