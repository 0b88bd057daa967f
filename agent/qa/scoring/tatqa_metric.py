"""TAT-QA's exact match and F1, scored rule for rule as the benchmark's official evaluator.

The rules are those of ``tatqa_metric.py`` with ``tatqa_utils.py`` of NExTplusplus/TAT-QA at
870accc4, read and written anew here. ``tests/agent/qa/data/tatqa_official_scores.jsonl`` holds
the official evaluator's EM and F1 on predictions over the released dev gold, and
``tests/agent/qa/test_qa_tatqa_official.py`` asserts that this module gives the same two numbers
on every row (and passes the authors' own metric tests).

Reading a number (rule N)
* *marks* are the characters ``' " \\ $ € £ ¥ % ( ) , [ ]``;
* a text *reads as a number* when, marks removed, its first whitespace-separated word is
  accepted by Python's ``float`` (and is not NaN), and its second word, if any, is a scale
  word: one containing hundred, thousand, million, billion or percent (so "12.5 million" and
  "$1,234" read as numbers, "12 months" and "2019 revenue" do not);
* its *value* is the first ``[+-]?digits[.digits]`` of the text with marks removed (an int
  unless it has a decimal point; a first number written ``.5`` gives no value), times the scale
  word of the first ``digits-or-dots, optional space, ASCII letters`` run of the text (hundred
  100, thousand 1e3, million 1e6, billion 1e9, percent 0.01, any other word 1), times -1 when
  the text holds ``(digits)`` (digits, dots and spaces only: so ``(1,234)`` stays *positive*,
  a quirk we follow), times 0.01 when it holds digits followed by ``%``; rounded to 4 decimals.

An answer as one string (rule S)
* the spans (a span or multi-span gold: its list; other golds: ``str`` of the answer, a count
  as ``str(int(answer))``; a prediction: its list, else the one string) are sorted as strings;
* a span that reads as a number becomes its value printed with 4 decimals: as it is when the
  span holds "%", else rounded to 2 decimals and multiplied by the answer's scale (gold: the
  item's scale; a prediction written as text: none). A span that does not, or whose value is
  missing, keeps its text with the scale word appended when there is a scale;
* the spans are joined by single spaces: a multi-span answer is one string, one bag of words.
* A one-span prediction that reads as a number and has no "%" is also tried as its bare
  value with 4 decimals (so ``0.1319`` matches a gold of 13.19 percent); the better (EM, F1)
  pair of the two tries counts.

Normalising and scoring (rule M)
* the string is cut at single spaces; each piece is lower-cased, stripped of ASCII
  punctuation unless it reads as a number, replaced by ``str(value)`` when it reads as a
  number (``"None"`` when it has no value), stripped of the articles a/an/the and of extra
  whitespace; empty pieces are dropped and the rest joined by spaces;
* EM is 1 when the two normalised strings are equal;
* F1 is the F1 of the two sets of words (precision 1 for an empty prediction, recall 1 for an
  empty gold; 0 when both are 0), rounded to 2 places as numpy rounds (half to even on the
  float times 100);
* for arithmetic and count golds F1 is set to EM; an empty prediction scores (0, 0).

A prediction and its scale (rule P)
TAT-QA's released evaluation takes each prediction as ``[answer, scale]`` (its
``sample_prediction.json``), and our solver's TAT-QA answer carries a scale field beside the
answer. :func:`tatqa_em_f1` scores such a pair as the official ``TaTQAEmAndF1`` does with
``pred_scale`` set. An answer written as one string with its scale in it is first split by
:func:`split_scale`:

* the text, stripped, ends with a scale marker: ``%``, or one of the words ``thousand``,
  ``million``, ``billion``, ``percent`` (any case) after a space, optionally followed by one
  ``.``;
* what stands before the marker, stripped, reads as a number under rule N, or is a JSON list
  whose elements all do (our multi-span form, ``["1.2", "3.4"] million``: one scale for all);
* then the answer is that part and the scale is the word (``percent`` for ``%``);
* else, the text is a JSON list whose elements each end with the same scale marker (our
  multi-span form with the scale written into every span, ``["(265 ) thousand", "120
  thousand"]``) and each reads as a number without it: the answer is the list of the elements
  without the marker and the scale is the word (one scale for all, as above);
* otherwise the answer is the text unchanged and the scale is ``""``.

A gold span that carries its own scale word (``$15.5 million`` on an item of scale
``million``) is scaled twice by the official rules, so the split pair of that very span
(``("$15.5", "million")``) scores 0; TAT-QA's own solvers hand such an answer over as the span
they copied, its word kept, with the scale beside it, and that pair scores 1. So for a span or
multi-span gold of which a span reads as a number and states the item's scale (its word, or
``%`` for percent), a text whose rule-P scale is that same scale is also read as copied (the
text as written, a trailing ``.`` dropped, with the scale: :func:`scale_readings`), and the
better (EM, F1) of the two pairs counts. Only there: elsewhere the copied pair would scale a
wrong magnitude into a right one (``185 thousand`` copied with ``thousand`` is 185 million).

So ``(33) million`` is ``("(33)", "million")``, ``(6.75)%`` is ``("(6.75)", "percent")``,
``$1,496.5 million`` is ``("$1,496.5", "million")``, ``["$ (3.5) million", "$2.1 million"]``
is ``('["$ (3.5)", "$2.1"]', "million")`` (as a string, ``$ (3.5) million`` would lose its
scale: an accounting negative before a scale word does), while ``33 million dollars``, ``12
months`` and ``1.2 and 3.4 million`` stay whole (scale ``""``). Under the pair the official rules score
the other way round from the whole string for three kinds of answer: an accounting negative
with a scale (right as a pair; as a string its scale is lost), a value within the 2-decimal
rounding (``283.804 million`` for 283.8: right as a pair, wrong as a string) and a
scale-shifted value (``0.234 billion`` for 234 million: wrong as a pair, since the value is
rounded to 2 decimals before the scale applies; right as a string).
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Sequence
from typing import Any

__all__ = [
    "OUR_TYPES",
    "reads_as_number",
    "number_value",
    "normalize_answer",
    "answer_string",
    "official_em_f1",
    "prediction_spans",
    "split_scale",
    "scale_readings",
    "tatqa_em_f1",
    "tatqa_em_f1_text",
    "TATQA_SCALES",
]

#: The scales of TAT-QA's release (a prediction's ``pred_scale`` is one of them).
TATQA_SCALES = ("", "thousand", "million", "billion", "percent")

#: TAT-QA's answer types by our name (``agent.qa.core.items.ANSWER_TYPES``).
OUR_TYPES = {"number": "arithmetic", "count": "count", "span": "span", "multi-span": "multi-span"}

_MARKS = str.maketrans("", "", "'\"\\$€£¥%(),[]")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_SCALE_WORDS = (("hundred", 100), ("thousand", 1000), ("million", 1000000), ("billion", 1000000000))
_FIRST_NUMBER = re.compile(r"([+-]?\d+(?:\.\d+)?)|[+-]?\.\d+")
_SCALED_RUN = re.compile(r"[\d.]+\s?[a-zA-Z]+")
_PARENTHESISED = re.compile(r"\([\d.\s]+\)")
_PERCENT = re.compile(r"[\d.\s]+%")
_ARTICLE = re.compile(r"\b(?:a|an|the)\b")


def _scale_factor(word: str) -> int | float:
    """The multiplier a word names (the first of hundred..billion it contains; percent 0.01)."""
    word = word.lower()
    for name, factor in _SCALE_WORDS:
        if name in word:
            return factor
    return 0.01 if "percent" in word else 1


def reads_as_number(text: str) -> bool:
    """Rule N: a number, possibly followed by a scale word (module docstring)."""
    words = text.translate(_MARKS).split()
    if not words:
        return False
    try:
        first = float(words[0])
    except ValueError:
        return False
    if first != first:  # NaN
        return False
    return len(words) < 2 or _scale_factor(words[1]) != 1


def _first_number(text: str) -> int | float | None:
    m = _FIRST_NUMBER.search(text.translate(_MARKS))
    if m is None or m.group(1) is None:
        return None
    digits = m.group(1)
    return float(digits) if "." in digits else int(digits)


def number_value(text: str) -> int | float | None:
    """Rule N's value of ``text``: its first number with scale word, sign and percent applied."""
    number = _first_number(text)
    if number is None:
        return None
    run = _SCALED_RUN.search(text)
    scale = _scale_factor(run.group(0)) if run else 1
    sign = -1 if _PARENTHESISED.search(text.strip()) else 1
    percent = 0.01 if _PERCENT.search(text.strip()) else 1
    return round(number * scale * sign * percent, 4)


def _normalize_piece(piece: str) -> str:
    piece = piece.lower()
    if not reads_as_number(piece):
        piece = piece.translate(_PUNCTUATION)
    if reads_as_number(piece):
        piece = str(number_value(piece))
    return " ".join(_ARTICLE.sub(" ", piece).split())


def normalize_answer(text: str) -> str:
    """Rule M's normal form of one answer string."""
    pieces = (_normalize_piece(p) for p in text.split(" "))
    return " ".join(p for p in pieces if p.strip()).strip()


def answer_string(spans: Sequence[Any], scale: str) -> str:
    """Rule S: the spans of one answer as one string (numbers in plain units, 4 decimals)."""
    out = []
    for span in sorted(spans):
        text = str(span)
        value = number_value(text) if reads_as_number(text) else None
        if value is None:
            out.append(f"{text} {scale}" if scale else text)
        elif "%" in text:
            out.append(f"{value:.4f}")
        else:
            out.append(f"{round(value, 2) * _scale_factor(scale):.4f}")
    return " ".join(out)


def _round2(x: float) -> float:
    """``round(numpy.float64(x), 2)``: half to even on ``x * 100`` as a float, then / 100."""
    return round(x * 100.0) / 100.0


def _em_f1(predicted: str, gold: str) -> tuple[float, float]:
    p_norm, g_norm = normalize_answer(predicted), normalize_answer(gold)
    em = 1.0 if p_norm == g_norm else 0.0
    p_bag, g_bag = set(p_norm.split()), set(g_norm.split())
    common = len(g_bag & p_bag)
    precision = common / float(len(p_bag)) if p_bag else 1.0
    recall = common / float(len(g_bag)) if g_bag else 1.0
    if precision == 0.0 and recall == 0.0:
        return em, 0.0
    return em, _round2((2 * precision * recall) / (precision + recall))


def _gold_spans(answer_type: str, answer: Any) -> list[Any]:
    if answer_type in ("span", "multi-span"):
        if not isinstance(answer, (list, tuple)):
            raise ValueError(f"a TAT-QA {answer_type} answer must be a list of spans, got {answer!r}")
        return list(answer)
    if answer_type == "count":
        return [str(int(answer))]
    return [str(answer)]


def official_em_f1(
    answer_type: str, gold_answer: Any, gold_scale: str, prediction: Any, pred_scale: str = ""
) -> tuple[float, float]:
    """``(EM, F1)`` as the official ``TaTQAEmAndF1`` scores ``prediction`` (a string, a number or
    a list of spans, with the scale ``pred_scale``) against a gold question's ``answer_type``
    (TAT-QA's: span, multi-span, arithmetic, count), ``answer`` and ``scale``."""
    if not prediction:
        return 0.0, 0.0
    gold = _gold_spans(answer_type, gold_answer)
    if not gold:
        return 0.0, 0.0
    gold_text = answer_string(gold, gold_scale)
    pred = list(prediction) if isinstance(prediction, list) else [prediction]
    tries = [answer_string(pred, pred_scale)]
    only = str(pred[0])
    if len(pred) == 1 and not pred_scale and "%" not in only and reads_as_number(only):
        value = number_value(only)
        if value is not None:
            tries.append(f"{value:.4f}")
    em, f1 = max(_em_f1(t, gold_text) for t in tries)
    if answer_type in ("arithmetic", "count"):
        f1 = em
    return em, f1


def prediction_spans(prediction: str) -> str | list[str]:
    """What a model's answer string hands the official evaluator: the list of a JSON list (each
    element as ``str``; our answer format for multi-span questions), else the string itself
    (a one-string answer is one span: no splitting on newlines, commas or "and")."""
    if prediction.strip().startswith("["):
        try:
            value = json.loads(prediction)
        except ValueError:
            return prediction
        if isinstance(value, list):
            return [str(v) for v in value]
    return prediction


_SCALE_MARK = re.compile(
    r"^(?P<head>.*?)(?:\s*%|\s+(?P<word>thousand|million|billion|percent))\.?$", re.I | re.S
)


def _marked(text: str) -> tuple[str, str] | None:
    """``(head, scale)`` of a text ending with a scale marker whose head reads as a number (or
    is a JSON list of such), else None."""
    m = _SCALE_MARK.match(text.strip())
    if m is None:
        return None
    head = m.group("head").strip()
    spans = prediction_spans(head)
    texts = spans if isinstance(spans, list) else [spans]
    if not head or not texts or not all(reads_as_number(t) for t in texts):
        return None
    word = m.group("word")
    return head, word.lower() if word else "percent"


def _marked_elements(prediction: str) -> tuple[list[str], str] | None:
    """A JSON list whose elements each end with the same scale marker: the elements without
    it and the scale; else None."""
    spans = prediction_spans(prediction)
    if not isinstance(spans, list) or not spans:
        return None
    cut = [_marked(s) for s in spans]
    if any(c is None or c[0].startswith("[") for c in cut):
        return None
    scales = {c[1] for c in cut if c is not None}
    if len(scales) != 1:
        return None
    return [c[0] for c in cut if c is not None], scales.pop()


def split_scale(prediction: str) -> tuple[str, str]:
    """Rule P: ``(answer, scale)`` of an answer string with its scale written into it
    (module docstring); ``(prediction, "")`` when it has no scale to split off."""
    marked = _marked(prediction)
    if marked is not None:
        return marked
    elements = _marked_elements(prediction)
    if elements is not None:
        return json.dumps(elements[0], ensure_ascii=False), elements[1]
    return prediction, ""


def _states_scale(span: Any, scale: str) -> bool:
    text = str(span)
    marks = ("%", "percent") if scale == "percent" else (scale,)
    return reads_as_number(text) and any(m in text.lower() for m in marks)


def scale_readings(
    prediction: str, gold_type: str = "", gold_answer: Any = None, gold_scale: str = ""
) -> list[tuple[str, str]]:
    """The ``(answer, scale)`` pairs an answer string is scored under (module docstring, rule
    P): the split pair; and, where a span of a span or multi-span gold (``gold_type`` ours or
    TAT-QA's) states the item's scale ``gold_scale`` and the text's scale is that one, the text
    as copied (a trailing ``.`` dropped) with it."""
    first = split_scale(prediction)
    kind = OUR_TYPES.get(gold_type, gold_type)
    if not first[1] or first[1] != gold_scale or kind not in ("span", "multi-span"):
        return [first]
    spans = gold_answer if isinstance(gold_answer, (list, tuple)) else ()
    if not any(_states_scale(a, gold_scale) for a in spans):
        return [first]
    as_written = prediction.strip()
    if as_written.endswith(".") and not as_written.startswith("["):
        as_written = as_written[:-1].rstrip()
    if _marked_elements(prediction) is None and as_written.startswith("["):
        return [first]  # a list with one trailing scale: its spans are already as written
    copied = (as_written, first[1])
    return [first] if copied == first else [first, copied]


def _gold(answer_type: str, gold_answer: Any, dropped_empty_spans: int) -> tuple[str, Any]:
    answer_type = OUR_TYPES.get(answer_type, answer_type)
    if answer_type in ("span", "multi-span"):
        gold_answer = [*gold_answer, *([""] * dropped_empty_spans)]
    return answer_type, gold_answer


def tatqa_em_f1(
    gold_answer: Any,
    gold_scale: str,
    gold_type: str,
    prediction: str,
    pred_scale: str,
    *,
    dropped_empty_spans: int = 0,
) -> tuple[float, float]:
    """``(EM, F1)`` of a prediction pair ``(prediction, pred_scale)`` against a TAT-QA gold
    answer, as the official evaluator scores it (``pred_scale=""``: the string as written, no
    separate scale).

    ``gold_type`` is ours (number, count, span, multi-span) or TAT-QA's own; a loader that
    dropped empty spans of the gold says how many (they are put back: the official string
    keeps them, and with a scale they add the scale word). A prediction that is a JSON list is
    handed over as that list (:func:`prediction_spans`).
    """
    if pred_scale not in TATQA_SCALES:
        raise ValueError(f"pred_scale={pred_scale!r}; allowed: {', '.join(map(repr, TATQA_SCALES))}")
    answer_type, gold_answer = _gold(gold_type, gold_answer, dropped_empty_spans)
    return official_em_f1(answer_type, gold_answer, gold_scale, prediction_spans(prediction), pred_scale)


def tatqa_em_f1_text(
    gold_answer: Any, gold_scale: str, gold_type: str, prediction: str, *, dropped_empty_spans: int = 0
) -> tuple[float, float]:
    """``(EM, F1)`` of an answer string with its scale written into it: read by rule P
    (:func:`scale_readings`), each pair scored as the official evaluator does
    (:func:`tatqa_em_f1`), the better one counting."""
    dropped = dropped_empty_spans
    return max(
        tatqa_em_f1(gold_answer, gold_scale, gold_type, answer, scale, dropped_empty_spans=dropped)
        for answer, scale in scale_readings(prediction, gold_type, gold_answer, gold_scale)
    )
