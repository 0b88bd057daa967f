"""TAT-QA's exact match and numeracy-aware F1, written from the published metric's rules.

Rules (Zhu et al., 2021, and the benchmark's evaluation script, re-implemented):

1. An answer is a bag of spans (one span for span/arithmetic/count answers, several for
   multi-span) plus a scale ("", thousand, million, billion, percent). A prediction states
   its scale by a trailing scale word or "%" on its spans ("-12.6 million", "22.2%"); a gold
   span may carry its own trailing scale word too, which counts when the gold scale is empty.
2. A span normalises to: a number (with "$", ",", "%", parentheses for negatives) becomes its
   value rounded to 2 decimals, printed with 2 decimals; any other span is lower-cased,
   punctuation and the articles a/an/the removed, numbers inside it normalised the same way,
   whitespace collapsed.
3. Exact match: the multisets of normalised spans are equal and the scales are equal.
4. F1: each span becomes a bag of tokens (its normalised words plus the scale word); gold
   and predicted bags are paired to maximise total F1 (exhaustively for up to 7 spans, else
   greedily); a pair whose gold bag holds numbers and whose predicted bag holds none of them
   scores 0; the F1 is the mean over max(#gold, #predicted) bags (unpaired bags score 0).
5. For arithmetic and count answers F1 equals exact match (a number is right or wrong).

A multi-span prediction is a JSON list of strings, or spans separated by newlines or ";".
"""

from __future__ import annotations

import itertools
import json
import re
import string
from collections.abc import Sequence
from typing import Any

from agent.qa.numbers import parse_number

__all__ = ["normalize_span", "split_scale", "prediction_spans", "tatqa_em_f1"]

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)
_PUNCT = str.maketrans("", "", string.punctuation)
_TRAILING_SCALE = re.compile(
    r"^(?P<body>.*?)(?:\s*(?P<word>thousands?|millions?|billions?|percent|per\s+cent)|\s*(?P<pct>%))\s*$",
    re.IGNORECASE | re.DOTALL,
)
_MAX_EXHAUSTIVE = 7


def _canon_number(value: float) -> str:
    return f"{round(value, 2) + 0.0:.2f}"


def split_scale(span: str) -> tuple[str, str]:
    """``(span without its trailing scale word, scale)``; scale is "" when none is written."""
    s = str(span).strip()
    m = _TRAILING_SCALE.match(s)
    if m is None or not m.group("body").strip():
        return s, ""
    word = (m.group("word") or "").lower().replace(" ", "")
    if m.group("pct") or word == "percent":
        return m.group("body").strip(), "percent"
    return m.group("body").strip(), word.rstrip("s")


def normalize_span(span: str) -> str:
    """The normalised form of one span (rule 2 of the module docstring)."""
    s = str(span).strip()
    n = parse_number(s)
    if n is not None and not n.scale:
        return _canon_number(n.value)
    out = []
    for token in s.lower().split():
        num = parse_number(token.strip(string.punctuation.replace("(", "").replace(")", "").replace("-", "")))
        if num is not None and not num.scale and any(ch.isdigit() for ch in token):
            out.append(_canon_number(num.value))
            continue
        token = _ARTICLES.sub(" ", token.translate(_PUNCT))
        out.extend(token.split())
    return " ".join(out)


def prediction_spans(prediction: str, *, multi: bool) -> list[str]:
    """The spans of a prediction string: a JSON list; else, when ``multi``, newline- or
    semicolon-separated parts; else the whole string."""
    text = str(prediction).strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list):
            return [str(v) for v in value if str(v).strip()]
    if multi:
        parts = [p.strip() for p in re.split(r"[\n;]", text)]
        return [p for p in parts if p]
    return [text] if text else []


def _bags(spans: Sequence[str], scale: str) -> list[set[str]]:
    return [set(normalize_span(s).split()) | ({scale} if scale else set()) for s in spans]


def _is_num(token: str) -> bool:
    return re.fullmatch(r"-?\d+\.\d\d", token) is not None


def _bag_f1(gold: set[str], pred: set[str]) -> float:
    gold_nums = {t for t in gold if _is_num(t)}
    if gold_nums and not (gold_nums & pred):
        return 0.0
    common = len(gold & pred)
    if common == 0 or not gold or not pred:
        return 0.0
    p, r = common / len(pred), common / len(gold)
    return 2 * p * r / (p + r)


def _aligned_f1(gold: list[set[str]], pred: list[set[str]]) -> float:
    n = max(len(gold), len(pred))
    if n == 0:
        return 1.0
    scores = [[_bag_f1(g, p) for p in pred] for g in gold]
    small, large = (gold, pred) if len(gold) <= len(pred) else (pred, gold)
    best = 0.0
    if len(small) <= _MAX_EXHAUSTIVE and len(large) <= _MAX_EXHAUSTIVE + 2:
        for perm in itertools.permutations(range(len(large)), len(small)):
            total = sum(
                scores[i][j] if small is gold else scores[j][i] for i, j in zip(range(len(small)), perm)
            )
            best = max(best, total)
    else:
        used: set[int] = set()
        for i in range(len(small)):
            row = [
                (scores[i][j] if small is gold else scores[j][i], j)
                for j in range(len(large))
                if j not in used
            ]
            s, j = max(row)
            used.add(j)
            best += s
    return best / n


def tatqa_em_f1(gold_answer: Any, gold_scale: str, gold_type: str, prediction: str) -> tuple[float, float]:
    """``(exact match, F1)`` of ``prediction`` against a TAT-QA gold answer.

    ``gold_type`` is ours (number, count, span, multi-span); ``gold_scale`` one of
    :data:`agent.qa.items.SCALES`.
    """
    gold_list = (
        [str(a) for a in gold_answer] if isinstance(gold_answer, (list, tuple)) else [str(gold_answer)]
    )
    g_split = [split_scale(s) for s in gold_list]
    g_scale = gold_scale or next((sc for _, sc in g_split if sc), "")
    g_spans = [
        body if (sc and (not gold_scale or sc == gold_scale)) else s
        for (body, sc), s in zip(g_split, gold_list)
    ]
    p_raw = prediction_spans(prediction, multi=len(gold_list) > 1 or gold_type == "multi-span")
    p_split = [split_scale(s) for s in p_raw]
    p_scale = next((sc for _, sc in p_split if sc), "")
    p_spans = [body for body, _ in p_split]
    if not p_spans:
        return 0.0, 0.0
    em = float(
        sorted(normalize_span(s) for s in g_spans) == sorted(normalize_span(s) for s in p_spans)
        and g_scale == p_scale
    )
    if gold_type in ("number", "count"):
        return em, em
    f1 = _aligned_f1(_bags(g_spans, g_scale), _bags(p_spans, p_scale))
    return em, f1
