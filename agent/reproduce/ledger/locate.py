r"""The ledger's locators checked against the texts they cite: every ``paper`` row's quote in the
paper's text with its value stated near it and its section the one the quote stands in, every
``authors`` row's tokens on the line(s) it names of the authors' released file.

Read by a test on the papers' texts and the authors' snapshots (and by anyone who has them: the
functions take the text and the folders, and read nothing else). The rules, with the decision
taken for each case a rule could read two ways:

- **Text.** The paper's text and a quote are compared *normalised*: lower case, curly quotes as
  straight ones, every run of whitespace as one space. Nothing else is forgiven: the words,
  their order, their punctuation, hyphens and dashes are verbatim.
- **Near.** The value must be stated within :data:`WINDOW` characters either side of the quote
  (of any one of its occurrences) in the normalised text: about one sentence each way, which is
  how far a citation's few words stand from the figure they locate in both papers.
- **Numbers** (a number, or each number of a list) are compared as numbers: every figure of the
  window is read, digits with thousands separators and decimals (``16,384``, ``0.65``,
  ``$K=8$``, ``0.2%`` as 0.2; a comma between digits also as a list separator, so
  ``\{0,120,240\}`` states 0, 120 and 240) and the number words zero to twenty (``eight``,
  ``ten-year``), and the value must equal one of them (to 1e-9 relative).
- **Strings** (a string, or each string of a list): every word of the value (its runs of letters
  and digits, lower case; a plural also as its singular) must occur in the window's letters and
  digits, in the value's order, so ``"SEC-NUM"`` needs "sec" and "num", ``"qwen3-vl-8b"``
  "qwen3", "vl" and "8b", and ``"qwen3-4b-nothink"`` is stated by "Qwen3-4B ... no-think". An ISO date
  (``"2025-01-02"``) is a date: the window must name its day and month ("2 January") and its
  year.
- A paper row's ``stated`` (what the paper states where the value is that statement in our units
  or our code's words, with a ``why``) is checked by the same rules in place of the value.
- **Booleans, unset, any and digest** rows are the quote's own statement ("source-traceable",
  "server-default sampling"): the quote must occur and stand in its section; no figure is read.
- **Section.** The text's headings (``4.1 Experiment Setup``, ``### G.2 FinAcumen
  Configuration``, ``A.3 Training-Reflection System Prompt``) divide it; the quote must stand
  under the section named or one of its subsections (``§4.3`` covers 4.3.4, ``App. A`` covers
  A.3). ``Table N`` and ``Fig. N`` are accepted where the quote stands in that table (from its
  caption to the next heading or caption) or the table or figure is named within the window. One
  heading is restored by name (:data:`RUN_IN`): Moira's text keeps Appendix C's inference settings
  as the paragraph "Open-weight run settings." after A.6, without its heading; §4.1 sends the
  reader to Appendix C for exactly these settings ("Appendix C lists inference settings").
- **Authors.** Each token must occur, whitespace-normalised but case-sensitive (code is), within
  the line range of ``at`` in the file at the pinned commit; a missing file or a range past its
  end is a failure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.reproduce.ledger.book import AUTHORS_REPOS, Ledger, LedgerEntry, LedgerValue, parse_at

__all__ = [
    "WINDOW",
    "RUN_IN",
    "PaperText",
    "normalise",
    "numbers_in",
    "check_paper_row",
    "check_authors_row",
    "check_ledger",
    "vendor_roots",
    "missing_roots",
]

#: Characters either side of a quote within which its value must be stated.
WINDOW = 200
#: Headings a paper's text lost, restored by the first words of their paragraph: paper ->
#: {paragraph start: section}.
RUN_IN = {"moira": {"Open-weight run settings.": "C"}}

_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"'})
_WORDS_N = [
    *("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    *("eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen"),
    *("nineteen", "twenty"),
]
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+")
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD_NUMBER = re.compile(r"(?<![a-z])(" + "|".join(_WORDS_N) + r")(?![a-z])")
_HEADING = {
    "moira": re.compile(r"^(?P<num>\d+(?:\.\d+)*|[A-Z]\.\d+(?:\.\d+)*) [A-Z][^\n]{0,90}$"),
    "finacumen": re.compile(r"^#{1,6} (?P<num>\d+(?:\.\d+)*|[A-Z]\.\d+(?:\.\d+)*) \S[^\n]*$"),
}
_NAMED = re.compile(
    r"^(?:#{1,6} )?(?P<name>Abstract|Limitations|Ethical Considerations|AI Use Disclosure|"
    r"Acknowledgments|References)$"
)
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTHS = [
    *("january", "february", "march", "april", "may", "june", "july", "august", "september"),
    *("october", "november", "december"),
]
_CAPTION = re.compile(r"^(?P<kind>Table|Figure) (?P<n>\d+):")


def normalise(text: str) -> str:
    """``text`` as quotes are compared: lower case, straight quotes, single spaces."""
    return " ".join(text.translate(_QUOTES).lower().split())


def numbers_in(text: str) -> list[float]:
    """Every figure ``text`` states: digits (thousands separators and decimals read) and the
    number words zero to twenty."""
    out = [float(m.replace(",", "")) for m in _NUMBER.findall(text)]
    out += [float(m) for m in _PLAIN_NUMBER.findall(text)]  # "{0,120,240}": commas as separators
    out += [float(_WORDS_N.index(w)) for w in _WORD_NUMBER.findall(text.lower())]
    return out


@dataclass(frozen=True)
class PaperText:
    """A paper's text, normalised, with where each section and each table or figure caption
    starts in it."""

    paper: str
    text: str
    #: (offset, section number: "4.1", "A.3", "C"; or a named part: "Limitations")
    sections: tuple[tuple[int, str], ...]
    #: (offset, "table 6" / "figure 2") of each caption
    captions: tuple[tuple[int, str], ...]

    @classmethod
    def read(cls, path: str | Path, paper: str) -> PaperText:
        return cls.parse(Path(path).read_text(encoding="utf-8"), paper)

    @classmethod
    def parse(cls, raw: str, paper: str) -> PaperText:
        parts: list[str] = []
        sections: list[tuple[int, str]] = []
        captions: list[tuple[int, str]] = []
        at = 0
        heading = _HEADING[paper]
        run_in = RUN_IN.get(paper, {})
        for line in raw.splitlines():
            norm = normalise(line)
            if not norm:
                continue
            stripped = line.strip()
            m = heading.match(stripped)
            named = _NAMED.match(stripped)
            cap = _CAPTION.match(stripped)
            if m is not None:
                sections.append((at, m["num"]))
            elif named is not None:
                sections.append((at, named["name"]))
            elif cap is not None:
                captions.append((at, f"{cap['kind'].lower()} {cap['n']}"))
            for start, sec in run_in.items():
                if stripped.startswith(start):
                    sections.append((at, sec))
            parts.append(norm)
            at += len(norm) + 1
        return cls(paper, " ".join(parts), tuple(sections), tuple(captions))

    def find(self, quote: str) -> list[int]:
        """Offsets of every occurrence of ``quote`` (normalised)."""
        q = normalise(quote)
        out, i = [], self.text.find(q)
        while q and i >= 0:
            out.append(i)
            i = self.text.find(q, i + 1)
        return out

    def section_at(self, offset: int) -> str:
        """The section the text at ``offset`` stands in ("" before the first heading)."""
        current = ""
        for at, sec in self.sections:
            if at > offset:
                break
            current = sec
        return current

    def in_caption_block(self, offset: int, name: str) -> bool:
        """Whether ``offset`` lies between the caption of ``name`` ("table 6") and the next
        heading or caption."""
        for at, cap in self.captions:
            if cap != name or at > offset:
                continue
            ends = [a for a, _ in self.sections if a > at] + [a for a, _ in self.captions if a > at]
            if offset < min(ends, default=len(self.text) + 1):
                return True
        return False


def _section_holds(text: PaperText, section: str, start: int, window: str) -> bool:
    kind, _, n = section.partition(" ")
    if kind in ("Table", "Fig.", "Algorithm"):
        name = {"Table": "table", "Fig.": "figure", "Algorithm": "algorithm"}[kind] + f" {n}"
        mentions = [name] + ([f"fig. {n}"] if kind == "Fig." else [])
        return text.in_caption_block(start, name) or any(
            re.search(re.escape(m) + r"(?![0-9])", window) for m in mentions
        )
    want = section.removeprefix("§").removeprefix("App. ")
    got = text.section_at(start)
    return got == want or got.startswith(want + ".")


def _states(target: Any, window: str) -> list[str]:
    """What of ``target`` the window does not state (empty: all of it)."""
    items = target if isinstance(target, (list, tuple)) else [target]
    figures: list[float] | None = None
    missing = []
    for x in items:
        if isinstance(x, bool) or x is None:
            continue
        if isinstance(x, (int, float)):
            figures = numbers_in(window) if figures is None else figures
            if not any(math.isclose(float(x), f, rel_tol=1e-9, abs_tol=1e-12) for f in figures):
                missing.append(repr(x))
        elif isinstance(x, str) and _ISO_DATE.match(x):
            year, month, day = (int(p) for p in x.split("-"))
            said = re.search(rf"(?<![0-9]){day} {_MONTHS[month - 1]}(?![a-z])", window)
            if said is None or str(year) not in window:
                missing.append(repr(x))
        elif isinstance(x, str) and not _in_order(x, window):
            missing.append(repr(x))
    return missing


def _in_order(value: str, window: str) -> bool:
    """Whether the words of ``value`` occur in ``window``'s letters and digits, in their order
    (a plural also as its singular)."""
    squashed = re.sub(r"[^a-z0-9]+", "", window)
    at = 0
    for w in (w for w in re.split(r"[^a-z0-9]+", value.lower()) if w):
        forms = [w, w[:-1]] if w.endswith("s") and len(w) > 1 else [w]
        hits = [(i, len(f)) for f in forms if (i := squashed.find(f, at)) >= 0]
        if not hits:
            return False
        i, n = min(hits)
        at = i + n
    return True


def check_paper_row(entry: LedgerEntry, row: LedgerValue, text: PaperText) -> list[str]:
    """What is wrong with a ``paper`` row's locator in ``text`` (empty: nothing)."""
    where = f"{entry.key} = {row.label()}"
    hits = text.find(row.quote)
    if not hits:
        return [f"{where}: quote {row.quote!r} is not in the {text.paper} text"]
    q = len(normalise(row.quote))
    target = (
        row.stated if row.stated is not None else (None if row.any or row.unset or row.digest else row.value)
    )
    fails: list[str] = []
    for start in hits:
        window = text.text[max(0, start - WINDOW) : start + q + WINDOW]
        missing = _states(target, window) if target is not None else []
        sec_ok = _section_holds(text, row.section, start, window)
        if not missing and sec_ok:
            return []
        if missing:
            fails.append(f"{', '.join(missing)} not stated within {WINDOW} characters of the quote")
        if not sec_ok:
            fails.append(f"the quote stands in section {text.section_at(start) or '?'!s}, not {row.section}")
    what = "stated" if row.stated is not None else "value"
    return [f"{where}: {what} check failed at quote {row.quote!r} ({'; '.join(dict.fromkeys(fails))})"]


def check_authors_row(entry: LedgerEntry, row: LedgerValue, roots: Mapping[str, Path]) -> list[str]:
    """What is wrong with an ``authors`` row's locator in the snapshots ``roots`` (repository
    name -> folder; empty: nothing)."""
    where = f"{entry.key} = {row.label()}"
    repo, path, first, last = parse_at(row.at)
    root = roots.get(repo)
    if root is None:
        return [f"{where}: no snapshot of {repo} to check {row.at}"]
    file = root / path
    if not file.is_file():
        return [f"{where}: {row.at}: no file {path} in {repo}"]
    lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
    if last > len(lines):
        return [f"{where}: {row.at}: {path} has {len(lines)} lines"]
    held = " ".join(" ".join(lines[first - 1 : last]).split())
    missing = [t for t in row.token if " ".join(t.split()) not in held]
    if missing:
        return [f"{where}: {row.at} does not hold token(s) {missing}"]
    return []


def check_ledger(ledger: Ledger, text: PaperText | None, roots: Mapping[str, Path] | None) -> list[str]:
    """Every locator problem of ``ledger``: paper rows against ``text``, authors rows against
    ``roots`` (either None: those rows are not checked)."""
    out: list[str] = []
    for e in ledger.entries:
        for v in e.values:
            if v.provenance == "paper" and text is not None:
                out += check_paper_row(e, v, text)
            elif v.provenance == "authors" and roots is not None:
                out += check_authors_row(e, v, roots)
    return out


def vendor_roots(vendor: Path, names: Iterable[str] = AUTHORS_REPOS) -> dict[str, Path]:
    """The snapshot folder of each authors' repository under ``vendor``: ``<name>-<commit>``
    (FinAcumen) or ``<repository>-<commit>`` (FinMem-LLM-StockTrading), at the pinned commit."""
    out = {}
    for name in names:
        repo, commit = AUTHORS_REPOS[name]
        folder = vendor / f"{repo.split('/')[1]}-{commit}"
        if folder.is_dir():
            out[name] = folder
    return out


def missing_roots(roots: Mapping[str, Path], ledger: Ledger) -> Sequence[str]:
    """The repositories ``ledger``'s authors rows name that ``roots`` lacks."""
    named = {parse_at(v.at)[0] for e in ledger.entries for v in e.values if v.provenance == "authors"}
    return sorted(named - set(roots))
