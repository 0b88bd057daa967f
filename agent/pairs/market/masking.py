"""Date masking of every model-visible text (Moira paper A.6).

Every prompt of the pair agent speaks in *step labels*: ``step 001`` is the first session of
the current window (training replay or test), ``step XXX`` stands for any date that is not a
session of the window. :class:`StepCalendar` maps session dates to labels; :func:`mask_text`
rewrites free text (news headlines and summaries above all); :func:`contains_calendar_leak`
finds what is left and is what the masking tests scan every prompt with.

Rules (one finder serves both the masker and the scan, so "masked" means "the scan finds
nothing", and the scan's strictness is exactly the rules below):

Dates -> step label of the session, else ``step XXX``
  * ISO ``2025-03-04`` (also ``2025/03/04``, a trailing time ``T14:30:00Z`` and the compact
    ``20250304`` when it is a valid date); an ISO-shaped but invalid date is ``step XXX``.
  * Numeric ``03/04/2025``, ``3/4/25``, ``03-04-2025``: month first (US order, the order of our
    news sources) unless ``day_first=True``; when the first number exceeds 12 the order is
    unambiguous and is used whatever the switch says. ``04.03.2025`` (dots) is always day first.
    A yearless ``3/4`` is a date only after on/since/from/until/through/by/before/after/as of/
    dated/effective (otherwise it is a fraction).
  * Month-name dates: ``March 4, 2025``, ``Mar. 4``, ``March 4th``, ``4 March 2025``,
    ``4th of March``, ``the 4th of March``, a leading weekday (``Friday, May 16, 2025``) and
    day ranges (``May 19-21`` -> ``step 013 to step 015``). A date without a year takes the
    year that puts it nearest to ``ref_date`` (the news item's own date) when one is given;
    without ``ref_date`` it is ``step XXX``.
Periods -> ``step XXX``
  * month + year (``November 2004``, ``Nov. 2020``, ``March of 2025``, ``Dec '24``);
  * bare years 1900-2099 (``since 2011``, ``mid-2025``, ``2024-2025``) unless they are plainly
    a number: preceded by ``$ € £ ¥ #``, a digit group (``2,025``), ``Russell`` (the index), or
    followed by ``%``, a decimal/thousands part, or a unit (points, shares, jobs, units, ...).
Fiscal periods keep their marker and lose the year: ``Q1 2025`` -> ``Q1``, ``1Q25`` -> ``1Q``,
  ``FY2025``/``FY25`` -> ``FY``, ``fiscal 2026`` -> ``fiscal``, ``first-quarter 2025`` ->
  ``first-quarter``, ``quarter of 2025`` -> ``quarter``.
Names -> removed (with one directly preceding connector such as on/in/of/since/last/next and
  an early/mid/late modifier, then spacing before punctuation is tidied):
  * weekdays ``Monday``..``Sunday`` (also plurals, possessives, UPPER and lower case);
    abbreviations ``Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun`` only inside a date, with a
    trailing period (a sentence's own period stays), or in Title case after a connector or a
    reporting verb (on, at, by, since, last, next, this; said, reported, ...; the verb stays)
    and not before a Title-case word, so ``Sun Life`` and ``sat down`` stay;
  * months ``January``..``December`` (Title/UPPER; lower case too except the words
    ``may``, ``march``, ``august``); abbreviations ``Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct
    Nov Dec`` by the same rules as weekday abbreviations (no reporting verbs), so
    ``Jan Hatzius``, ``APR`` (a rate, or the TSX ticker ``APR.UN``) and ``Mar-a-Lago`` stay;
  * ``May`` (Title/UPPER) is the month only inside a date, after a connector (in, of, since,
    for, to, mid-, ...), after another month and and/or/to/through, before a possessive, a
    punctuation mark or the end of the text, or before a month-context noun (sales, payrolls,
    CPI, data, report, quarter, ...); otherwise it is the modal verb and stays
    (``Apple May Face Tariffs``). Lower-case ``may`` is always the verb.
  * a name glued to a following ``-word`` or ``.word`` (``Monday.com``) is part of a name.
Holidays (Thanksgiving, Christmas, Black Friday, Labor Day, Fourth of July, ...) -> ``holiday``.

Kept on purpose: relative words (today, yesterday, this week, last year), seasons (the words
are common English: "fall", "spring"), times of day, quarter markers without a year (``Q2``),
tickers and company names (a ticker is upper case and never followed by a day number).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from agent.data.schema import to_date
from localfin.errors import ConfigError

__all__ = ["StepCalendar", "MISSING_LABEL", "mask_text", "contains_calendar_leak", "calendar_spans"]

#: The label of any date that is not a session of the window.
MISSING_LABEL = "step XXX"


@dataclass(frozen=True)
class StepCalendar:
    """The sessions of one window (training replay or test), oldest first.

    ``label(d)`` is ``"step 001"`` for the first session (1-based, zero-padded to at least three
    digits), ``"step XXX"`` for a date outside the window or not a session.
    """

    sessions: tuple[dt.date, ...]
    _index: dict[dt.date, int] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        days = tuple(to_date(d) for d in self.sessions)
        if not days:
            raise ConfigError("StepCalendar.sessions must hold at least one session date")
        for k in range(1, len(days)):
            if days[k] <= days[k - 1]:
                raise ConfigError(
                    f"StepCalendar.sessions must be strictly increasing; sessions[{k}]={days[k]} "
                    f"follows {days[k - 1]}"
                )
        object.__setattr__(self, "sessions", days)
        object.__setattr__(self, "_index", {d: k for k, d in enumerate(days)})

    @classmethod
    def from_sessions(cls, dates: Iterable[Any]) -> StepCalendar:
        """A calendar from session dates (ISO strings, ``datetime.date`` or ``datetime64``)."""
        return cls(tuple(to_date(d) for d in dates))

    def __len__(self) -> int:
        return len(self.sessions)

    @property
    def width(self) -> int:
        """Digits of a label (three, more for windows beyond 999 sessions)."""
        return max(3, len(str(len(self.sessions))))

    def index(self, date: Any) -> int | None:
        """0-based session index of ``date`` in the window, ``None`` if it is not a session."""
        return self._index.get(to_date(date))

    def label_at(self, index: int) -> str:
        """Label of the 0-based session ``index`` (``step 001`` for 0)."""
        if not 0 <= index < len(self.sessions):
            raise ConfigError(f"session index {index} outside the window [0, {len(self.sessions) - 1}]")
        return f"step {index + 1:0{self.width}d}"

    def label(self, date: Any) -> str:
        """``step NNN`` of ``date`` or ``step XXX`` when it is not a session of the window."""
        k = self.index(date)
        return MISSING_LABEL if k is None else self.label_at(k)


# ---------------------------------------------------------------------------------------------
# Vocabulary

_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_MONTH_ABBR = {
    "Jan": 1,
    "Feb": 2,
    "Mar": 3,
    "Apr": 4,
    "Jun": 6,
    "Jul": 7,
    "Aug": 8,
    "Sep": 9,
    "Sept": 9,
    "Oct": 10,
    "Nov": 11,
    "Dec": 12,
}
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WEEKDAY_ABBR = ("Mon", "Tue", "Tues", "Wed", "Thu", "Thur", "Thurs", "Fri", "Sat", "Sun")
# Lower-case forms that are ordinary English words are never calendar names.
_AMBIGUOUS_LOWER = {"may", "march", "august"}
_MONTH_NUMBER = {m.lower(): k + 1 for k, m in enumerate(_MONTHS)} | {
    a.lower(): n for a, n in _MONTH_ABBR.items()
}


def _cased(words: Iterable[str], *, lower: bool) -> str:
    forms: list[str] = []
    for w in words:
        forms += [w, w.upper()]
        if lower and w.lower() not in _AMBIGUOUS_LOWER:
            forms.append(w.lower())
    return "|".join(sorted(set(forms), key=len, reverse=True))


_FULL_MONTH = _cased([m for m in _MONTHS if m != "May"], lower=True)
_ABBR_MONTH = _cased(_MONTH_ABBR, lower=False)
_MAY = "May|MAY"
_FULL_WD = _cased(_WEEKDAYS, lower=True)
_ABBR_WD = _cased(_WEEKDAY_ABBR, lower=False)

# A month name as it appears inside a date (abbreviations may carry a period).
_MONTH_IN_DATE = rf"(?:{_FULL_MONTH}|(?:{_MAY}|{_ABBR_MONTH})\.?)"
_WEEKDAY_IN_DATE = rf"(?:(?:{_FULL_WD})|(?:{_ABBR_WD})\.?)"
_DAY = r"(?:3[01]|[12]\d|0?[1-9])(?:st|nd|rd|th)?"
_YEAR4 = r"(?:19|20)\d\d"
_YEAR = rf"(?:{_YEAR4}|['’]\d\d)"
# After a day number: not more digits, a percentage, a decimal or a thousands group.
_NUM_END = r"(?![\d%]|[.,]\d)"
_NAME_END = r"(?![\w]|[-.][A-Za-z])"  # not glued to -word / .word (Mar-a-Lago, Monday.com)

_CONNECTORS = (
    "on|in|of|at|since|until|till|through|thru|during|by|from|before|after|last|next|this|"
    "every|early|mid|late|end|for|to|between|starting|beginning|ending|around|as of"
)
_MAY_ADJ = (
    "strong|weak|mixed|volatile|tough|solid|good|bad|great|rough|record|busy|quiet|brutal|dismal|stellar"
)
_WD_VERBS = "said|says|reported|announced|added|told|closed|fell|rose|gained|dropped|slid|jumped"
_MAY_NOUNS = (
    "sales|deliveries|payrolls|jobs|employment|cpi|ppi|inflation|data|figures|numbers|report|reports|"
    "reading|contract|contracts|futures|options|expiration|expiry|quarter|meeting|auction|lows?|highs?|"
    "print|retail|revenue|shipments|volumes?|orders|production|output|survey|index|pmi|fomc|close|"
    "session|rally|selloff|sell-off|decline|gains?|losses|performance|returns?"
)
_FISCAL_MARK = (
    r"(?:Q[1-4]|[1-4]Q|H[12]|[12]H|FY|fiscal(?:[- ]year)?|(?:(?:first|second|third|fourth)[- ])?quarter|"
    r"(?:first|second)[- ]half)"
)
_UNITS = (
    "points?|pts|shares|units|employees|jobs|workers|people|stores|vehicles|cars|chips|servers|tons|"
    "barrels|miles|customers|users|times|bps|basis|percent|per cent|positions|layoffs|lay-offs|staff"
)
_HOLIDAYS = (
    r"Thanksgiving|Christmas(?: Eve| Day)?|Xmas|Easter|Good Friday|Black Friday|Cyber Monday|"
    r"Memorial Day|Labor Day|Labour Day|Independence Day|Fourth of July|Juneteenth|"
    r"New Year(?:['’]s)?(?: Day| Eve)?|Presidents['’]? Day|Martin Luther King(?: Jr\.?)? Day|MLK Day|"
    r"Veterans Day|Columbus Day|Halloween|Valentine['’]s Day|Boxing Day"
)

_ISO = re.compile(
    rf"(?<![\w./-])({_YEAR4})([-/.])(\d{{1,2}})\2(\d{{1,2}})"
    r"(?:T\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?:Z|[+-]\d\d:?\d\d)?)?(?![\w/]|[-.]\d)"
)
_COMPACT = re.compile(rf"(?<![\w.])({_YEAR4})(\d\d)(\d\d)(?!\w)")
_NUMERIC = re.compile(r"(?<![\w./-])(\d{1,2})([/.-])(\d{1,2})\2(\d{4}|\d\d)(?![\w/]|[-.]\d)")
_NUMERIC_SHORT = re.compile(
    r"(?i:\b(?:on|since|from|until|till|through|by|before|after|as\s+of|dated|effective)\s+)"
    r"(\d{1,2})/(\d{1,2})(?![\w/]|[.,]\d)"
)
# Month-name dates: [weekday,] Month day[-day][,] [year]
_MDY = re.compile(
    rf"(?:\b{_WEEKDAY_IN_DATE},?\s+)?\b(?P<mon>{_MONTH_IN_DATE})\s*(?P<d1>{_DAY}){_NUM_END}"
    rf"(?:\s*[-–]\s*(?P<d2>{_DAY}){_NUM_END})?(?:,?\s*(?P<yr>{_YEAR})(?!\w))?"
)
# Day-first: [weekday,] [the] day [of] Month [year]
_DMY = re.compile(
    rf"(?:\b{_WEEKDAY_IN_DATE},?\s+)?(?:\bthe\s+)?(?<![\w.,$])(?P<d1>{_DAY})\s+(?:of\s+)?"
    rf"(?P<mon>{_MONTH_IN_DATE})(?!\w)(?:,?\s*(?P<yr>{_YEAR})(?!\w))?"
)
_MONTH_RANGE = re.compile(rf"\b(?:{_MONTH_IN_DATE})\s*[-–/]\s*(?:{_MONTH_IN_DATE})(?!\w)")
_MONTH_YEAR = re.compile(rf"\b(?P<mon>{_MONTH_IN_DATE})(?:\s+of)?,?\s*(?P<yr>{_YEAR})(?!\w)")
_FISCAL_YEAR = re.compile(rf"(?i:\b(?P<mark>{_FISCAL_MARK})(?:\s+of)?)\s*['’-]?\s*(?P<yr>{_YEAR})(?!\w)")
_FISCAL_YEAR_GLUED = re.compile(r"\b(?P<mark>Q[1-4]|[1-4]Q|FY)['’]?(?P<yr>\d\d)(?!\w)")
_YEAR_SPAN = re.compile(
    rf"(?<![\w$€£¥#.,:/-])(?<!Russell )(?i:(?:early|mid|late|end|start)[- ])?(?P<y1>{_YEAR4})"
    rf"(?:\s*[-–/]\s*(?:{_YEAR4}|\d\d))?(?![\w%]|[.,]\d|\s*(?i:{_UNITS})\b)"
)
_HOLIDAY = re.compile(rf"\b(?:{_HOLIDAYS})(?!\w)")
# Bare names are found by the name itself (fast), then the text just before it is read for a
# connector ("on", "in early", ...) that goes with it, or a reporting verb / adjective that stays.
_TAIL = 40  # characters before a name searched for its connector
_CONN_TAIL = re.compile(rf"\b(?i:{_CONNECTORS})\s+(?:(?i:early|mid|late)[- ])?$|(?i:early|mid|late)[- ]$")
_VERB_TAIL = re.compile(rf"\b(?i:{_WD_VERBS})\s+$")
_ADJ_TAIL = re.compile(rf"\b(?i:an?|the)\s+(?i:{_MAY_ADJ})\s+$")
_MONTH_AND_TAIL = re.compile(rf"\b(?:{_FULL_MONTH}|{_ABBR_MONTH})\.?\s+(?i:and|or|to|through|-|–)\s+$")
_MONTH_NAME = re.compile(rf"\b(?:{_FULL_MONTH})(?:['’]s)?{_NAME_END}")
_WEEKDAY_NAME = re.compile(rf"\b(?:{_FULL_WD})s?(?:['’]s)?{_NAME_END}")
_MONTH_ABBR_NAME = re.compile(rf"\b(?P<name>{_ABBR_MONTH})(?P<dot>\.)?(?![\w]|[-.][A-Za-z\d])")
_WEEKDAY_ABBR_NAME = re.compile(rf"\b(?P<name>{_ABBR_WD})(?P<dot>\.)?(?![\w]|[-.][A-Za-z\d])")
_NOT_TITLE_NEXT = re.compile(r"(?!\s+[A-Z][a-z])")
_MAY_NAME = re.compile(rf"\b(?:{_MAY})(?P<poss>['’]s)?(?![\w]|-[A-Za-z])")
_MAY_AFTER = re.compile(rf"\s*(?:[.,;:!?)]|$)|\s+(?i:{_MAY_NOUNS})\b")
_STEP_LABEL = re.compile(r"\bstep\s+(?:\d+|XXX)\b")


class _Span(NamedTuple):
    start: int
    end: int
    kind: str  # date | period | fiscal | name | holiday
    replacement: str | None  # None for dates: resolved by the calendar
    dates: tuple[dt.date | None, ...] = ()


def _safe_date(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def _year(token: str | None, ref: dt.date | None) -> int | None:
    if token is None:
        return None
    t = token.lstrip("'’")
    return int(t) if len(t) == 4 else 2000 + int(t)


def _nearest(month: int, day: int, ref: dt.date | None) -> dt.date | None:
    if ref is None:
        return None
    options = [d for y in (ref.year - 1, ref.year, ref.year + 1) if (d := _safe_date(y, month, day))]
    return min(options, key=lambda d: abs((d - ref).days)) if options else None


def _day(token: str) -> int:
    return int(re.match(r"\d+", token).group(0))  # type: ignore[union-attr]


def _named_date(m: re.Match[str], ref: dt.date | None) -> _Span:
    month = _MONTH_NUMBER[m.group("mon").rstrip(".").lower()]
    year = _year(m.group("yr"), ref)
    days = [_day(m.group("d1"))]
    if "d2" in m.groupdict() and m.group("d2"):
        days.append(_day(m.group("d2")))
    dates = tuple(_safe_date(year, month, d) if year else _nearest(month, d, ref) for d in days)
    return _Span(m.start(), m.end(), "date", None, dates)


def _numeric_date(
    a: int, b: int, year: int | None, sep: str, day_first: bool, ref: dt.date | None
) -> dt.date | None:
    first_is_day = sep == "." or day_first or a > 12
    if a > 12 and b > 12:
        return None
    day, month = (a, b) if first_is_day else (b, a)
    if year is None:
        return _nearest(month, day, ref)
    return _safe_date(year, month, day)


class _Cut:
    """A match shortened to end at ``end`` (a sentence's period is not part of the name)."""

    def __init__(self, m: re.Match[str], end: int) -> None:
        self._m, self._end = m, end

    def start(self) -> int:
        return self._m.start()

    def end(self) -> int:
        return self._end


def calendar_spans(text: str, *, ref_date: Any = None, day_first: bool = False) -> list[_Span]:
    """Every calendar reference in ``text`` as non-overlapping spans, in text order.

    Earlier rule families win over later ones (full dates before periods, periods before bare
    names). Exposed for tests and audits; :func:`mask_text` and :func:`contains_calendar_leak`
    are the API.
    """
    ref = None if ref_date is None else to_date(ref_date)
    taken: list[_Span] = []
    protected = [(m.start(), m.end()) for m in _STEP_LABEL.finditer(text)]

    def free(s: int, e: int) -> bool:
        return all(e <= a or s >= b for a, b in protected) and all(
            e <= sp.start or s >= sp.end for sp in taken
        )

    def add(span: _Span) -> None:
        if span.end > span.start and free(span.start, span.end):
            taken.append(span)

    for m in _ISO.finditer(text):
        add(_Span(m.start(), m.end(), "date", None, (_safe_date(int(m[1]), int(m[3]), int(m[4])),)))
    for m in _COMPACT.finditer(text):
        d = _safe_date(int(m[1]), int(m[2]), int(m[3]))
        if d is not None:
            add(_Span(m.start(), m.end(), "date", None, (d,)))
    for m in _NUMERIC.finditer(text):
        y = int(m[4]) if len(m[4]) == 4 else 2000 + int(m[4])
        add(
            _Span(
                m.start(),
                m.end(),
                "date",
                None,
                (_numeric_date(int(m[1]), int(m[3]), y, m[2], day_first, ref),),
            )
        )
    for m in _NUMERIC_SHORT.finditer(text):
        a, b = int(m[1]), int(m[2])
        if min(a, b) >= 1 and ((a <= 12 and b <= 31) or (b <= 12 and a <= 31)):
            add(_Span(m.start(1), m.end(2), "date", None, (_numeric_date(a, b, None, "/", day_first, ref),)))
    for rx in (_MDY, _DMY):
        for m in rx.finditer(text):
            add(_named_date(m, ref))
    for m in _MONTH_YEAR.finditer(text):
        add(_Span(m.start(), m.end(), "period", MISSING_LABEL))
    for rx in (_FISCAL_YEAR_GLUED, _FISCAL_YEAR):
        for m in rx.finditer(text):
            add(_Span(m.start(), m.end(), "fiscal", m.group("mark")))
    for m in _MONTH_RANGE.finditer(text):
        add(_Span(m.start(), m.end(), "name", ""))
    for m in _HOLIDAY.finditer(text):
        add(_Span(m.start(), m.end(), "holiday", "holiday"))
    for m in _YEAR_SPAN.finditer(text):
        add(_Span(m.start(), m.end(), "period", MISSING_LABEL))

    def tail(rx: re.Pattern[str], start: int) -> re.Match[str] | None:
        return rx.search(text, max(0, start - _TAIL), start)

    def add_name(m: re.Match[str] | _Cut, prefix: re.Match[str] | None = None) -> None:
        # the connector goes with the name unless it already belongs to another span
        if prefix is not None and free(prefix.start(), m.end()):
            add(_Span(prefix.start(), m.end(), "name", ""))
        else:
            add(_Span(m.start(), m.end(), "name", ""))

    for rx in (_MONTH_NAME, _WEEKDAY_NAME):
        for m in rx.finditer(text):
            add_name(m, tail(_CONN_TAIL, m.start()))
    for rx in (_MONTH_ABBR_NAME, _WEEKDAY_ABBR_NAME):
        weekday = rx is _WEEKDAY_ABBR_NAME
        for m in rx.finditer(text):
            if m.group("dot") and text[m.end() : m.end() + 1] in ("", " ", ",", ";", ":", ")", "\n"):
                # "since Oct." / "Fri.": the period marks it; at a sentence end the period stays
                end_of_sentence = not re.match(r" [a-z]", text[m.end() : m.end() + 2])
                add_name(_Cut(m, m.end() - 1) if end_of_sentence else m, tail(_CONN_TAIL, m.start()))
            elif not m.group("name").istitle() or not _NOT_TITLE_NEXT.match(text, m.end()):
                continue  # "APR", "Jan Hatzius", "Sun Life": not calendar names
            elif conn := tail(_CONN_TAIL, m.start()):
                add_name(m, conn)
            elif weekday and tail(_VERB_TAIL, m.start()):
                add_name(m)  # "said Wed": the verb stays
    for m in _MAY_NAME.finditer(text):
        if prefix := tail(_CONN_TAIL, m.start()) or tail(_MONTH_AND_TAIL, m.start()):
            add_name(m, prefix)
        elif m.group("poss") or tail(_ADJ_TAIL, m.start()) or _MAY_AFTER.match(text, m.end()):
            add_name(m)  # "a strong May": only the month goes
    return sorted(taken)


def _render(span: _Span, calendar: StepCalendar) -> str:
    if span.replacement is not None:
        return span.replacement
    labels = [MISSING_LABEL if d is None else calendar.label(d) for d in span.dates]
    return " to ".join(labels)


_PUNCT_AFTER = (",", ".", ";", ":", "!", "?", ")")


def _apply(text: str, spans: list[_Span], calendar: StepCalendar) -> str:
    out = ""
    pos = 0
    for sp in spans:
        out += text[pos : sp.start]
        rep = _render(sp, calendar)
        pos = sp.end
        if rep:
            out += rep
            continue
        # a removed name takes one neighbouring space with it: no double space, no " ,"
        nxt = text[pos : pos + 1]
        if out.endswith((" ", "\t")) and (nxt in _PUNCT_AFTER or nxt == ""):
            out = out.rstrip(" \t")
        elif nxt in (" ", "\t") and (out == "" or out.endswith((" ", "\t", "(", "\n"))):
            pos += 1
    return out + text[pos:]


def mask_text(text: str, calendar: StepCalendar, *, ref_date: Any = None, day_first: bool = False) -> str:
    """``text`` with every calendar reference replaced by the module's rules.

    calendar: the window's sessions (labels). ref_date: the date the text was written (a news
    item's date) to give yearless dates their year; ``None``: yearless dates become ``step XXX``.
    day_first: read ambiguous ``03/04/2025`` as 3 April (default: 4 March, US order).
    The result passes :func:`contains_calendar_leak` with no finding (masking is repeated until
    nothing is found; a removal never creates a new date, which the tests check).
    """
    if not isinstance(text, str):
        raise ConfigError(f"mask_text needs a str, got {type(text).__name__}")
    out = text
    for _ in range(4):
        spans = calendar_spans(out, ref_date=ref_date, day_first=day_first)
        if not spans:
            return out
        out = _apply(out, spans, calendar)
    spans = calendar_spans(out, ref_date=ref_date, day_first=day_first)
    if spans:  # pragma: no cover - a safety net; the rules converge in one pass on all test text
        out = _apply(out, [s._replace(kind="name", replacement=MISSING_LABEL) for s in spans], calendar)
    return out


def contains_calendar_leak(text: str) -> list[str]:
    """Every date, period, weekday, month name or holiday left in ``text`` (empty: clean).

    Step labels (``step 012``, ``step XXX``) are not leaks. Uses the same rules as
    :func:`mask_text` (see the module docstring), so ``contains_calendar_leak(mask_text(t, c))``
    is always empty and the function does not fire on ordinary financial prose (modal "may",
    fractions, prices, counts, index names, tickers).
    """
    if not isinstance(text, str):
        raise ConfigError(f"contains_calendar_leak needs a str, got {type(text).__name__}")
    return [text[s.start : s.end] for s in calendar_spans(text)]
