"""The keyword side of the lifecycle news path: candidate events and the masked news block.

:func:`match_critical_news` proposes *candidate events* from news items by whole-word keyword
match (``LifecycleConfig.news_keywords``; a space in a phrase also matches a hyphen). A hit is
suppressed (kept for the audit by :func:`scan_news_keywords` with its ``guard``) when, in this
order:

- ``routine``: it sits inside boilerplate (``routine_phrases``: "acquires 8,800 shares",
  "purchased or otherwise acquired", "fraud detection");
- ``negated``: a negation cue ("not", "denies", "rules out", ..., any "-n't" word) precedes
  it within ``negation_span`` words of its own clause (clauses end at , ; : and "but");
- ``generic``: an industry word sits right before or after it ("industry merger activity",
  "merger speculation");
- ``immaterial``: its sentence calls the deal small/bolt-on/tuck-in/immaterial/minor;
- ``other_company``: its sentence names neither the leg (ticker or a name alias; "Microsoft-
  backed OpenAI" names OpenAI) nor, via "the company"/"it"/"its", a leg named in the headline
  ("OpenAI to acquire io" in an Apple feed).

The guards only drop obvious noise; anything subtler (the leg as the *buyer*, a law firm's
class-action notice) goes to the verification call (:mod:`agent.pairs.lifecycle.calls`),
whose job that is. :func:`news_summary` renders the past-week news of both legs, masked, for
the two model calls: compact (``news_token_budget`` 0: lines cut to ``item_max_chars``, the
newest ``news_summary_max_items`` within ``news_summary_max_chars``, oldest first) or whole items
newest first under the prompt's news budget (:mod:`agent.pairs.market.newsbudget`), the paper's
past week of news without a cut item.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agent.pairs.lifecycle.config import LifecycleConfig
from agent.pairs.market.masking import StepCalendar, mask_text
from agent.pairs.market.newsbudget import BudgetCut, estimate_tokens, fit_newest_first

__all__ = [
    "CandidateEvent",
    "NewsSummary",
    "scan_news_keywords",
    "match_critical_news",
    "news_summary",
    "summarize_news",
]


def _field(item: Any, name: str) -> Any:
    return item[name] if isinstance(item, Mapping) else getattr(item, name)


# --- keyword matcher ----------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateEvent:
    """A structural-news keyword hit on one leg's news item (raw, unmasked text).

    date: the item's date (any form :class:`StepCalendar` accepts); category: the keyword's
    category; keyword: the text that matched; sentence: the sentence holding it (at most
    ``item_max_chars``); guard: why it was suppressed, empty for a live candidate; summary: the
    item's whole summary text.
    """

    ticker: str
    date: Any
    category: str
    keyword: str
    headline: str
    sentence: str
    guard: str = ""
    summary: str = ""

    def to_payload(self, calendar: StepCalendar, *, whole: bool = False) -> dict[str, str]:
        """The masked form the verification call sees: step label instead of the date; ``text``
        is the matched sentence, or with ``whole`` the item's whole summary (paper-scale news)."""
        body = self.summary.strip() if whole and self.summary.strip() else self.sentence
        return {
            "leg": self.ticker,
            "step": calendar.label(self.date),
            "keyword_category": self.category,
            "headline": mask_text(self.headline, calendar, ref_date=self.date),
            "text": " ".join(mask_text(body, calendar, ref_date=self.date).split()),
        }


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|(?<=[a-z0-9)][.!?])(?=[A-Z])")
_CLAUSE = re.compile(r"[,;:]|\bbut\b", re.IGNORECASE)
_WORD = re.compile(r"[\w'’-]+")
_NOT = re.compile(r"\w+n['’]t$", re.IGNORECASE)  # doesn't, won't, isn't: negations too
_COREF = re.compile(r"\b(?:the company|the firm|the group|its|it)\b", re.IGNORECASE)
_SUFFIX = re.compile(
    r"[,.]?\s+(?:Inc|Incorporated|Corp|Corporation|Co|Company|Ltd|Limited|plc|PLC|Holdings|Group|N\.?V|S\.?A|AG)\.?$"
)
_GENERIC_FIRST = {"advanced", "american", "general", "united", "first", "national", "international", "global"}


def _phrase_rx(phrase: str) -> str:
    return r"\b" + r"[\s-]+".join(re.escape(w) for w in phrase.split()) + r"\b"


@lru_cache(maxsize=32)
def _compiled(config: LifecycleConfig) -> dict[str, Any]:
    keywords = sorted(config.news_keywords, key=lambda kv: -len(kv[1]))  # longest phrase wins
    return {
        # one alternation: group k<i> is keyword i, its category in "categories"
        "keywords": re.compile(
            "|".join(f"(?P<k{i}>{_phrase_rx(p)})" for i, (_, p) in enumerate(keywords)), re.IGNORECASE
        ),
        "categories": {f"k{i}": cat for i, (cat, _) in enumerate(keywords)},
        # a sentence can only match a phrase that has all its words in it: a cheap pre-check
        "words": tuple({tuple(p.lower().split()) for _, p in keywords}),
        "negation": re.compile("|".join(_phrase_rx(c) for c in config.negation_cues), re.IGNORECASE),
        "immaterial": re.compile("|".join(_phrase_rx(c) for c in config.immaterial_cues), re.IGNORECASE),
        "generic": {c.lower() for c in config.generic_cues},
        "routine": [re.compile(p, re.IGNORECASE) for p in config.routine_phrases],
    }


def _aliases(ticker: str, names: Mapping[str, str | Sequence[str]] | None) -> list[str]:
    out = {ticker}
    given = (names or {}).get(ticker)
    for name in [given] if isinstance(given, str) else list(given or ()):
        name = name.strip()
        if not name:
            continue
        out.add(name)
        short = name
        while (stripped := _SUFFIX.sub("", short)) != short:
            short = stripped
        out.add(short)
        first = short.split()[0].strip(",.")
        if len(first) >= 4 and first.lower() not in _GENERIC_FIRST:
            out.add(first)
    return sorted(out, key=len, reverse=True)


def _mentions(text: str, aliases: Sequence[str]) -> bool:
    # "Microsoft-backed OpenAI" names OpenAI, not Microsoft
    return any(
        re.search(r"(?<![\w])" + re.escape(a) + r"(?![\w]|-(?i:backed|owned|based|led|funded)\b)", text)
        for a in aliases
    )


def _guard(
    sentence: str, start: int, end: int, headline_names_leg: bool, aliases: Sequence[str], cx: dict
) -> str:
    for rx in cx["routine"]:
        for m in rx.finditer(sentence):
            if m.start() <= start < m.end() or start <= m.start() < end:
                return "routine"
    clause_start = max((m.end() for m in _CLAUSE.finditer(sentence, 0, start)), default=0)
    before = _WORD.findall(sentence[clause_start:start])[-cx["span"] :]
    if before and (cx["negation"].search(" ".join(before)) or any(_NOT.search(w) for w in before)):
        return "negated"
    prev = _WORD.findall(sentence[:start])[-1:]
    nxt = _WORD.findall(sentence[end:])[:1]
    if any(w.lower() in cx["generic"] for w in prev + nxt):
        return "generic"
    if cx["immaterial"].search(sentence):
        return "immaterial"
    if not (_mentions(sentence, aliases) or (headline_names_leg and _COREF.search(sentence))):
        return "other_company"
    return ""


def _scan_item(item: Any, cx: dict, config: LifecycleConfig, names: Mapping | None) -> list[CandidateEvent]:
    ticker = str(_field(item, "ticker"))
    headline = str(_field(item, "headline") or "")
    summary = str(_field(item, "summary") or "")
    aliases = _aliases(ticker, names)
    head_names = _mentions(headline, aliases)
    found: dict[str, CandidateEvent] = {}
    for text in (headline, summary):
        for sentence in (s for s in _SENTENCE.split(text) if s and s.strip()):
            low = sentence.lower()
            if not any(all(w in low for w in words) for words in cx["words"]):
                continue
            for m in cx["keywords"].finditer(sentence):
                cat = cx["categories"][m.lastgroup]
                guard = _guard(sentence, m.start(), m.end(), head_names, aliases, cx)
                old = found.get(cat)
                if old is None or (old.guard and not guard):
                    found[cat] = CandidateEvent(
                        ticker,
                        _field(item, "date"),
                        cat,
                        m.group(0),
                        headline,
                        sentence.strip()[: config.item_max_chars],
                        guard,
                        summary,
                    )
    return sorted(found.values(), key=lambda e: (e.guard != "", e.category))


def _context(config: LifecycleConfig) -> dict[str, Any]:
    return dict(_compiled(config), span=config.negation_span)


def scan_news_keywords(
    items: Iterable[Any],
    config: LifecycleConfig = LifecycleConfig(),
    *,
    names: Mapping[str, str | Sequence[str]] | None = None,
) -> list[CandidateEvent]:
    """Every keyword hit in ``items`` with its guard (empty guard = live candidate), for audits.

    items: news items with ``ticker``, ``date``, ``headline``, ``summary`` (attributes, e.g.
    :class:`agent.data.schema.NewsItem`, or mapping keys). names: ticker -> company name (or a
    list of aliases) for the other-company guard; without it only the ticker names the leg.
    At most one event per item and category (a live hit preferred), live events first.
    """
    cx = _context(config)
    return [ev for item in items for ev in _scan_item(item, cx, config, names)]


def match_critical_news(
    items: Iterable[Any],
    config: LifecycleConfig = LifecycleConfig(),
    *,
    names: Mapping[str, str | Sequence[str]] | None = None,
) -> list[CandidateEvent]:
    """Live candidate events of ``items``, at most one per item (its first live category), in
    item order. Each is meant to trigger one ``news_verify`` call; see :func:`scan_news_keywords`.
    """
    cx = _context(config)
    out: list[CandidateEvent] = []
    for item in items:
        live = [ev for ev in _scan_item(item, cx, config, names) if not ev.guard]
        out += live[:1]
    return out


@dataclass(frozen=True)
class NewsSummary:
    """The past-week news block of one prompt and what its bounds did (``cut.omitted``: items
    the news budget left out; 0 in compact mode, whose bounds are the config's)."""

    text: str
    cut: BudgetCut


def _line(item: Any, calendar: StepCalendar) -> str:
    date = _field(item, "date")
    head = mask_text(str(_field(item, "headline") or ""), calendar, ref_date=date).strip()
    summ = mask_text(str(_field(item, "summary") or ""), calendar, ref_date=date).strip()
    body = head if not summ or summ == head else f"{head.rstrip('.')}. {summ}"
    return " ".join(f"{calendar.label(date)} {_field(item, 'ticker')}: {body}".split())


def news_summary(
    items: Iterable[Any],
    calendar: StepCalendar,
    config: LifecycleConfig = LifecycleConfig(),
    *,
    budget: int = 0,
    reserved: int = 0,
) -> NewsSummary:
    """The masked past-week news block of ``items`` (oldest first as the monitor gathers them).

    Line: ``step 012 GRNF: <headline>. <summary>`` with dates masked (ref_date = the item's
    date). ``budget`` 0 (compact): oldest first, each line at most ``item_max_chars``, at most
    ``news_summary_max_items`` lines and ``news_summary_max_chars`` in all (the oldest lines go
    first). ``budget`` > 0: whole lines, newest first, while their estimated tokens fit the
    budget after ``reserved`` tokens of other news in the same prompt (the candidate event of a
    verification). ``"no news"`` when nothing is shown.
    """
    lines = [_line(item, calendar) for item in items]
    if budget:
        newest = lines[::-1]
        fit = fit_newest_first(newest, budget, reserved=reserved)
        shown = newest[: fit.shown]
        return NewsSummary("\n".join(shown) if shown else "no news", fit)
    out = []
    for line in lines:
        if len(line) > config.item_max_chars:
            line = line[: config.item_max_chars - 3].rstrip() + "..."
        out.append(line)
    out = out[-config.news_summary_max_items :]
    while out and sum(len(x) + 1 for x in out) > config.news_summary_max_chars:
        out.pop(0)
    text = "\n".join(out) if out else "no news"
    return NewsSummary(text, BudgetCut(len(out), 0, estimate_tokens(text) if out else 0, 0))


def summarize_news(
    items: Iterable[Any],
    calendar: StepCalendar,
    config: LifecycleConfig = LifecycleConfig(),
    *,
    budget: int = 0,
    reserved: int = 0,
) -> str:
    """The text of :func:`news_summary`."""
    return news_summary(items, calendar, config, budget=budget, reserved=reserved).text
