"""Memorization control (``[experiment] anonymize = true``, beyond the papers): every
model-visible text of a run names the pool's stocks by stable aliases, and every reply is mapped
back before the run uses it.

Aliases are deterministic from the pool: its tickers in sorted order get ``STOCK_A``,
``STOCK_B``, ... (``STOCK_AA`` after ``STOCK_Z``), and each company's name becomes
``Company A``, ``Company B``, ... with the same letter; a letter that is itself a one-letter
ticker of the pool is skipped, so no alias contains a pool ticker as a word.

What is replaced (:meth:`Aliases.text`), in one pass over the text, longest form first:

* every form of each company's name: the name as stored (``Coca-Cola Company (The)``), with a
  moved or leading "The" (``The Coca-Cola Company``), without its legal suffixes (``Inc.``,
  ``Corporation``, ``Company``, ``Co``, ``Ltd``, ``plc``, ``Holdings``, ``Class A``, ...:
  ``Coca-Cola``), without a ``.com`` (``Amazon``), a ``...Co`` name's stem (``PepsiCo`` ->
  ``Pepsi``) and the first distinctive word of a longer name (``Hormel Foods`` -> ``Hormel``;
  not a generic word such as "General" or "American", nor an initial); case-insensitive, on word
  boundaries, so possessives (``Coca-Cola's`` -> ``Company A's``) keep their ending;
* every ticker on word boundaries, also as a cashtag (``$KO``) or an exchange mention
  (``NYSE: KO``); case-insensitive for tickers of two letters or more, exact case for one-letter
  tickers (``K``), which would otherwise hit the word "k".

The request rewrite (:meth:`Aliases.request`) rewrites every message and every string of the
reply schema (the selection's enum of pair labels, with its ``maxLength`` recomputed); the result
rewrite (:meth:`Aliases.result`) maps the reply text and every string of the parsed reply back
(``STOCK_A/STOCK_B`` -> ``KO/PEP``). The journal holds what the model saw and said; the trace and
every decision hold real tickers.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from serving.chat.types import ChatRequest, ChatResult

__all__ = ["Aliases", "name_forms", "anonymized"]

_SUFFIXES = {
    "inc",
    "incorporated",
    "corp",
    "corporation",
    "co",
    "company",
    "companies",
    "ltd",
    "limited",
    "plc",
    "llc",
    "lp",
    "sa",
    "ag",
    "nv",
    "se",
    "holdings",
    "holding",
    "group",
    "the",
}
#: first words too generic to stand for a company on their own
_GENERIC = {
    "the",
    "general",
    "american",
    "united",
    "first",
    "national",
    "international",
    "global",
    "advanced",
    "new",
    "north",
    "south",
    "east",
    "west",
    "western",
    "eastern",
    "southern",
    "northern",
    "royal",
    "central",
    "great",
    "big",
    "best",
    "digital",
    "applied",
    "public",
    "service",
    "consolidated",
    "old",
}


def _clean(name: str) -> str:
    return " ".join(name.replace("\u00a0", " ").split())


def _strip_suffixes(name: str) -> str:
    words = re.sub(r"\((?:the|class [a-z])\)", " ", name, flags=re.IGNORECASE)
    words = re.sub(r"\bclass [a-z]\b", " ", words, flags=re.IGNORECASE)
    toks = [t for t in re.split(r"[\s,]+", words) if t]
    while toks and toks[0].lower() == "the":
        toks = toks[1:]
    while toks and toks[-1].lower().strip(".") in _SUFFIXES | {"&"}:
        toks = toks[:-1]
    return " ".join(toks)


def name_forms(name: str) -> list[str]:
    """Every form of a company name the rewrite replaces (longest first)."""
    full = _clean(name)
    if not full:
        return []
    forms = {full}
    moved = re.match(r"^(.*?)\s*\(the\)\s*$", full, flags=re.IGNORECASE)
    if moved:
        forms |= {f"The {moved.group(1)}", moved.group(1)}
    if full.lower().startswith("the "):
        forms.add(full[4:])
    core = _strip_suffixes(full)
    if core:
        forms.add(core)
        for suffix in (".com", ".net"):
            if core.lower().endswith(suffix):
                forms.add(core[: -len(suffix)])
        words = core.split()
        if len(words) == 1 and re.fullmatch(r"[A-Z][a-z]{3,}Co", words[0]):
            forms.add(words[0][:-2])  # PepsiCo -> Pepsi
        firsts = [w for w in words if not re.fullmatch(r"(?:[A-Za-z]\.)+|[A-Za-z]", w)]
        if len(words) > 1 and firsts:
            w = firsts[0].rstrip(".,")
            if len(w) >= 3 and w.lower() not in _GENERIC and w.lower() not in _SUFFIXES:
                forms.add(w)
    return sorted((f for f in forms if len(f) >= 2), key=lambda f: (-len(f), f))


def _letters(k: int) -> str:
    s = ""
    k += 1
    while k:
        k, r = divmod(k - 1, 26)
        s = chr(ord("A") + r) + s
    return s


def _name_rx(form: str) -> str:
    """A name form as a pattern: spaces match any run of spaces, and may be absent after an
    initial ("J. M. Smucker" also matches "J.M. Smucker"); word boundaries on both ends."""
    parts = form.split()
    body = re.escape(parts[0])
    for prev, part in zip(parts, parts[1:]):
        body += (r"\s*" if prev.endswith(".") else r"\s+") + re.escape(part)
    tail = r"(?![\w])" if form[-1].isalnum() else ""
    return rf"(?<![\w]){body}{tail}"


@dataclass(frozen=True)
class Aliases:
    """The aliases of one pool: ticker -> ``STOCK_X``, ticker -> ``Company X``, the name forms."""

    tickers: Mapping[str, str]
    names: Mapping[str, str]
    forms: Mapping[str, tuple[str, ...]]

    @classmethod
    def for_pool(cls, pool: Sequence[str], companies: Mapping[str, Any] | None = None) -> Aliases:
        """Aliases of ``pool`` (sorted), with the name forms of ``companies`` (ticker -> an object
        with a ``name``)."""
        tickers = sorted(dict.fromkeys(pool))
        single = {t for t in tickers if len(t) == 1}
        letters: list[str] = []
        k = 0
        while len(letters) < len(tickers):
            s = _letters(k)
            k += 1
            if s not in single:
                letters.append(s)
        companies = companies or {}
        forms = {}
        for t in tickers:
            c = companies.get(t)
            name = getattr(c, "name", "") if c is not None else ""
            forms[t] = tuple(f for f in name_forms(name) if f.upper() != t or len(t) > 1)
        return cls(
            {t: f"STOCK_{s}" for t, s in zip(tickers, letters)},
            {t: f"Company {s}" for t, s in zip(tickers, letters)},
            forms,
        )

    # -- the forward rewrite -----------------------------------------------------------------
    def _forward(self) -> tuple[re.Pattern[str], re.Pattern[str], dict[str, str], dict[str, str]]:
        cached = self.__dict__.get("_fw")
        if cached is not None:
            return cached
        by_name: dict[str, str] = {}
        for t, fs in self.forms.items():
            for f in fs:
                by_name.setdefault(f.lower(), self.names[t])
        names = sorted(by_name, key=lambda f: (-len(f), f))
        name_rx = re.compile("|".join(_name_rx(f) for f in names) or r"(?!x)x", re.IGNORECASE)
        multi = [t for t in self.tickers if len(t) > 1]
        one = [t for t in self.tickers if len(t) == 1]
        alts = []
        if multi:
            alts.append("(?i:" + "|".join(re.escape(t) for t in sorted(multi, key=len, reverse=True)) + ")")
        if one:
            alts.append("|".join(re.escape(t) for t in one))
        tick_rx = re.compile(rf"(?<![\w])\$?(?:{'|'.join(alts)})(?![\w])" if alts else r"(?!x)x")
        by_ticker = {t.upper(): a for t, a in self.tickers.items()}
        out = (name_rx, tick_rx, by_name, by_ticker)
        object.__setattr__(self, "_fw", out)
        return out

    def text(self, text: str) -> str:
        """``text`` with every company name form and ticker of the pool replaced."""
        if not text:
            return text
        name_rx, tick_rx, by_name, by_ticker = self._forward()

        def name(m: re.Match[str]) -> str:
            key = " ".join(m.group(0).split()).lower()
            return by_name[key] if key in by_name else by_name[_lookup(m.group(0), by_name)]

        out = name_rx.sub(name, text)
        return tick_rx.sub(lambda m: by_ticker[m.group(0).lstrip("$").upper()], out)

    def request(self, req: ChatRequest) -> ChatRequest:
        """``req`` as the model sees it: every message and schema string rewritten."""
        msgs = tuple(replace(m, content=self.text(m.content)) for m in req.messages)
        schema = _schema(req.json_schema, self.text) if req.json_schema is not None else None
        return replace(req, messages=msgs, json_schema=schema)

    # -- the way back ------------------------------------------------------------------------
    def back(self, text: str) -> str:
        """A reply's text with every alias replaced by the real ticker / company name."""
        if not text:
            return text
        rx = self.__dict__.get("_bw")
        if rx is None:
            aliases = {a: t for t, a in self.tickers.items()}
            for t, a in self.names.items():
                fs = self.forms.get(t) or ()
                aliases[a] = min(fs, key=len) if fs else t
            keys = sorted(aliases, key=len, reverse=True)
            rx = (re.compile(r"(?<![\w])(?:" + "|".join(re.escape(k) for k in keys) + r")(?![\w])"), aliases)
            object.__setattr__(self, "_bw", rx)
        pattern, aliases = rx
        return pattern.sub(lambda m: aliases[m.group(0)], text)

    def result(self, res: ChatResult) -> ChatResult:
        """``res`` with its text and every string of its parsed reply mapped back."""
        return replace(res, text=self.back(res.text), parsed=_walk(res.parsed, self.back))

    def to_dict(self) -> dict[str, Any]:
        """The alias table (for the manifest)."""
        return {t: {"ticker": self.tickers[t], "name": self.names[t]} for t in self.tickers}


def _lookup(found: str, by_name: Mapping[str, str]) -> str:
    key = re.sub(r"\s+", "", found).lower()
    for k in by_name:
        if re.sub(r"\s+", "", k) == key:
            return k
    raise KeyError(found)


def _walk(value: Any, fn: Any) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, list):
        return [_walk(v, fn) for v in value]
    if isinstance(value, tuple):
        return tuple(_walk(v, fn) for v in value)
    if isinstance(value, Mapping):
        return {k: _walk(v, fn) for k, v in value.items()}
    return value


def _schema(schema: Mapping[str, Any], fn: Any) -> dict[str, Any]:
    out = _walk(dict(schema), fn)

    def fix(node: Any) -> None:
        if isinstance(node, dict):
            enum = node.get("enum")
            if isinstance(enum, list) and "maxLength" in node and all(isinstance(e, str) for e in enum):
                node["maxLength"] = max(len(e) for e in enum)
            for v in node.values():
                fix(v)
        elif isinstance(node, list):
            for v in node:
                fix(v)

    fix(out)
    return out


Gen = Generator[list[ChatRequest], list[ChatResult], Any]


def anonymized(program: Gen, aliases: Aliases) -> Gen:
    """``yield from program`` with every request rewritten for the model and every result mapped
    back before the program reads it."""
    try:
        reqs = next(program)
    except StopIteration as stop:
        return stop.value
    while True:
        results = yield [aliases.request(r) for r in reqs]
        try:
            reqs = program.send([aliases.result(r) for r in results])
        except StopIteration as stop:
            return stop.value
