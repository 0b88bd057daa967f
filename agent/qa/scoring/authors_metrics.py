"""The scorers FinAcumen's authors released, rule for rule (the ``authors`` scorers).

FinAcumen's Table 1 figures were scored by the authors' released harness
(CamelliaLilium/FinAcumen at 16246593): every result row is graded when it is written by one
native rule per benchmark (``ft/variant/base.py`` routes to ``ft/eval/bizbench_eval.py``,
``finmmr_eval.py``, ``finmme_eval.py`` and ``fintmm_eval.py``), on the gold as their dataset
adapter (``ft/dataset/adapters.py``) writes it; FinTMMBench rows are then graded again by a judge
model (:mod:`agent.qa.scoring.judge`, the strict prompt). Read and written anew here; the tables
``tests/agent/qa/data/*_scores.jsonl`` hold the authors' own verdicts, made by running their code
outside this repository (``tests/agent/qa/data/README.md``), and the tests assert the same
verdict on every row.

BizBench SEC-NUM (:func:`bizbench_authors`): both texts lose every ``$``, ``%`` and ``,``, are
stripped and lower-cased; equal texts are right; else, when both read as Python ``float``
literals (which takes ``1e3``, ``1_000``, ``inf``), the numbers must be equal. No tolerance and
no magnitude word: ``12.5 million`` against ``12.5`` is wrong, ``12.50`` is right.

FinMMR (:func:`finmmr_authors`): the gold, a number in the released file, is first written as
the adapter writes it: a float with six significant digits (``f"{g:.6g}"``, so 1234567.89
becomes ``1.23457e+06``), an int as it is. Each side is then read as a number: the content of
the first ``\\boxed{...}`` (no nested braces) if any; lower-cased; currency signs ``£ € ¥ $``
removed, then the magnitude words trillion, billion, million, thousand and the single letters
m, b, k, t as whole words (never applied), then usd, rmb, cny, eur, gbp, then ``%`` and ``°``;
every comma removed (``1,779`` is 1779); stripped; read as a Python float, else as plain
arithmetic (digits, spaces, ``. + - * / ( )`` only: the four operations and signs), else the
last number in the text (``-?digits[.digits][e±digits]``). Right when the prediction lies
within 0.2 % of the gold, inclusive. A gold the adapter does not write as a number (text, or
a bool, which it writes ``True``) scores wrong.

FinMME (:func:`finmme_authors`): a choice item (question type single or multiple choice, or an
item with options) takes the first non-space run after ``Answer:`` (any case), else the letters
after ``answer`` / ``the answer is`` (A to N, any case), else the whole text, and compares the
sets of letters A to N it holds (upper-cased) with the gold's. A numerical item reads each side
with ``, $ £ € ¥ %`` and whitespace removed as a float, else its first number, and is right
within the item's absolute ``tolerance`` (None: 0) plus 1e-9. Any other item: equal texts,
case ignored.

FinTMMBench (:func:`fintmm_authors_em`): SQuAD exact match above 0.5: both texts lower-cased,
ASCII punctuation removed, the articles a/an/the removed, whitespace collapsed, then equal.
"""

from __future__ import annotations

import ast
import operator
import re
import string
from collections.abc import Callable
from typing import Any

__all__ = [
    "bizbench_authors",
    "finmmr_authors",
    "finmmr_adapter_gold",
    "finmmr_authors_number",
    "finmme_authors",
    "finmme_authors_choice",
    "squad_normalize",
    "fintmm_authors_em",
]

# --- BizBench ---------------------------------------------------------------------------------
_BIZ_DROP = str.maketrans("", "", "$%,")


def _biz_norm(text: str) -> str:
    return str(text).translate(_BIZ_DROP).strip().lower()


def _py_float(text: str) -> float | None:
    try:
        return float(text)
    except (ValueError, TypeError):
        return None


def bizbench_authors(gold: str, prediction: str) -> bool:
    """The authors' BizBench SEC-NUM verdict (module docstring)."""
    gold, pred = str(gold).strip(), str(prediction).strip()
    if not pred:
        return False
    g, p = _biz_norm(gold), _biz_norm(pred)
    if g == p:
        return True
    gf, pf = _py_float(g), _py_float(p)
    return gf is not None and pf is not None and gf == pf


# --- FinMMR -----------------------------------------------------------------------------------
_BOXED = re.compile(r"\\boxed\s*\{\s*([^{}]+?)\s*\}")
_CURRENCY = re.compile(r"[£€¥$]")
_MAGNITUDE = re.compile(r"\b(?:trillion|billion|million|thousand|[mbkt])\b", re.IGNORECASE)
_UNIT = re.compile(r"\b(?:usd|rmb|cny|eur|gbp)\b", re.IGNORECASE)
_PCT_DEG = re.compile(r"[%°]")
_ARITHMETIC = re.compile(r"^[\d\s.\+\-\*/\(\)]+$")
_LAST_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_OPS: dict[type, Callable[..., float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_MAX_ARITHMETIC_CHARS = 2000  # deeper nesting would exhaust the parser's recursion


def _arith(node: ast.AST) -> float | None:
    if isinstance(node, ast.Expression):
        return _arith(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _arith(node.left), _arith(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Div) and right == 0):
            return None
        return _OPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
        inner = _arith(node.operand)
        return None if inner is None else _OPS[type(node.op)](inner)
    return None


def _arithmetic(text: str) -> float | None:
    """Plain arithmetic of digits and ``. + - * / ( )``; parsed, never evaluated as code."""
    if not _ARITHMETIC.match(text) or len(text) > _MAX_ARITHMETIC_CHARS:
        return None
    try:
        return _arith(ast.parse(text, mode="eval"))
    except (SyntaxError, OverflowError, RecursionError, MemoryError):
        return None  # an int too large for a float, or nesting too deep: no number


def finmmr_authors_number(text: str) -> float | None:
    """A FinMMR answer (or gold) read as a number by the authors' rule (module docstring)."""
    if not text:
        return None
    raw = str(text).strip()
    m = _BOXED.search(raw)
    if m:
        raw = m.group(1)
    s = _CURRENCY.sub("", raw.lower())
    s = _MAGNITUDE.sub("", s)
    s = _UNIT.sub("", s)
    s = _PCT_DEG.sub("", s)
    s = s.replace(",", "").strip()
    if not s:
        return None
    value = _py_float(s)
    if value is not None:
        return value
    value = _arithmetic(s)
    if value is not None:
        return value
    found = _LAST_NUMBER.findall(s)
    return _py_float(found[-1]) if found else None


def finmmr_adapter_gold(ground_truth: Any) -> str | None:
    """The gold as the authors' adapter writes it for a numerical item (None: it writes the
    gold as text, which their numeric rule cannot score)."""
    if isinstance(ground_truth, float):
        return f"{ground_truth:.6g}"
    if isinstance(ground_truth, int):  # a bool too: True is written "True"
        return str(ground_truth)
    return None


def finmmr_authors(ground_truth: Any, prediction: str) -> bool:
    """The authors' FinMMR verdict for a gold as released (module docstring)."""
    gold_text = finmmr_adapter_gold(ground_truth)
    if gold_text is None:
        return False
    g = finmmr_authors_number(gold_text)
    p = finmmr_authors_number(str(prediction).strip())
    if g is None or p is None:
        return False
    eps = abs(g) * 0.002
    return (g - eps) <= p <= (g + eps)


# --- FinMME -----------------------------------------------------------------------------------
_ANSWER_COLON = re.compile(r"(?i)Answer\s*:\s*([^\s\n]+)")
_ANSWER_IS = re.compile(r"(?i)(?:the\s+)?answer(?:\s+is)?\s*[:\s]\s*([A-N][,\s]*(?:[A-N][,\s]*)*)")
_LETTERS = set("ABCDEFGHIJKLMN")
_FINMME_DROP = re.compile(r"[,\$£€¥%\s]")
_FINMME_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


def finmme_authors_choice(prediction: str) -> str:
    """The part of a reply the authors' FinMME rule reads letters from."""
    s = str(prediction)
    m = _ANSWER_COLON.search(s) or _ANSWER_IS.search(s)
    return m.group(1) if m else s


def _letter_set(text: str) -> set[str]:
    return {c for c in text.upper() if c in _LETTERS}


def _finmme_float(text: str) -> float | None:
    cleaned = _FINMME_DROP.sub("", str(text).strip())
    value = _py_float(cleaned)
    if value is not None:
        return value
    m = _FINMME_NUMBER.search(cleaned)
    return float(m.group()) if m else None


def finmme_authors(
    question_type: str, gold: str, prediction: str, *, tolerance: Any = None, has_options: bool = False
) -> bool:
    """The authors' FinMME verdict: ``question_type`` as released (single_choice,
    multiple_choice, numerical), ``gold`` the released answer text, ``tolerance`` the released
    value (None allowed), ``has_options`` whether the row's options are non-empty."""
    qtype = str(question_type or "")
    gold, pred = str(gold).strip(), str(prediction).strip()
    if qtype in ("single_choice", "multiple_choice") or ("choice" in qtype.lower() or has_options):
        return _letter_set(finmme_authors_choice(pred)) == _letter_set(gold)
    if qtype.lower() in ("numeric", "numerical", "number"):
        tol = float(tolerance or 0.0)
        g, p = _finmme_float(gold), _finmme_float(pred)
        return g is not None and p is not None and abs(p - g) <= tol + 1e-9
    return pred.lower() == gold.lower()


# --- FinTMMBench ------------------------------------------------------------------------------
_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def squad_normalize(text: str) -> str:
    """SQuAD's answer normal form: lower case, no ASCII punctuation, no articles, single spaces."""
    s = "".join(ch for ch in str(text).lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", s).split())


def fintmm_authors_em(gold: str, prediction: str) -> bool:
    """The authors' FinTMMBench default verdict: SQuAD exact match above 0.5 (their harness
    grades an empty answer this way too: right only against a gold that normalises to
    nothing)."""
    return squad_normalize(gold) == squad_normalize(prediction)
