"""FinMMR's right/wrong verdict, rule for rule as the benchmark's ``get_acc``.

The rules are those of ``evaluate/utils/evaluation_utils.py`` (``get_acc``, ``normalize``,
``within_eps``) and ``evaluate/evaluate.py`` (the CoT check before it) of addictedLL/FinMMR at
d8b12ccc, read and written anew here. ``tests/agent/qa/data/finmmr_official_scores.jsonl`` holds
the authors' verdicts on 3,000 predictions over the released easy-validation gold, and
``tests/agent/qa/test_qa_finmmr_official.py`` asserts the same verdict on every row.

The official normaliser runs Python's ``eval`` on the answer text. Model text is never
evaluated here: :func:`_python_value` parses it with :mod:`ast` (the parser ``eval`` uses) and
computes only what such an answer can be: number, string, ``True``/``False``/``None``
literals, tuples, lists, sets and dicts of them, the arithmetic and bitwise operators (``^``
is XOR to Python: ``10^3`` is 9; unary + - ~ ``not`` too), comparisons, ``and``/``or``,
``x if c else y``, indexing and slicing, ``__debug__``, and calls of the pure builtins abs,
round, min, max, pow, sum, int, float, bool, complex, divmod, len, ord. Anything else (a name,
an attribute, another call) counts as an expression ``eval`` could not evaluate. The official
script would look such names up in its module and run such calls; for an answer string they
give no number (a function, a module, a string), or a number only in contrived cases
(``id(0)``, ``hash('a')``). An integer power with an exponent above 10,000 or a
sequence repeated more than 10**6 times, or a left shift by more than 10**6 bits, is refused
as well (``eval`` would spend minutes or all memory on it).

Verdict of an answer string ``a`` against a gold ``g`` (an int or float; a bool compares with
``==``):
0. the CoT check: an empty answer, or one containing "none" in any case, is wrong;
1. ``a`` is evaluated as Python; if that works, its value is the answer (so ``1,779`` is the
   tuple (1, 779) and reads as 1: a quirk we follow);
2. otherwise the text is cleaned, in this order: stripped, lower-cased, trailing dots removed;
   every "£", "€", "¥", "million", "billion", "thousand", "us", "usd", "rmb" removed anywhere
   (so magnitude words are ignored: ``0.04525 thousand`` is 0.04525); the part after the last
   "=" and after the last "≈" kept; "`", "%", "$", "°" removed; true/yes/false/no become a
   bool, and so does any text containing "true" or "false"; "approximately" removed; the part
   before the first " or " kept; then four unit patterns cut a number out of "number unit",
   "unit number", "number plus one or two non-digits" and "one or two non-signs plus number";
   ``10^k`` is rewritten to ``math.pow(10, k)`` (which the official module cannot evaluate:
   no ``math`` there), " x " and " × " to "*"; a number with thousands separators loses its
   commas; an empty text becomes "None"; the result is evaluated as Python (no value: wrong);
3. a tuple or list answer is its first element;
4. the answer is right when it lies within 0.2 % of ``g``, inclusive:
   ``g - e <= a <= g + e`` with ``e = |g| * 0.002``; anything that does not compare is wrong.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

__all__ = ["RELATIVE_EPS", "finmmr_normalize", "finmmr_get_acc", "finmmr_acc"]

#: FinMMR's relative tolerance (``within_eps``).
RELATIVE_EPS = 0.002

_MAX_EXPONENT = 10_000
_MAX_SHIFT = 1_000_000
_MAX_REPEAT = 10**6
_REMOVED_WORDS = ("£", "€", "¥", "million", "billion", "thousand", "us", "usd", "rmb")
_NUM = r"[-+]?(?:[\d,]*\.*\d+)"
_NUMBER_UNIT = re.compile(rf"({_NUM}) [^0-9 ]+$")
_UNIT_NUMBER = re.compile(rf"[^0-9 ]+ ({_NUM})$")
_NUMBER_TAIL = re.compile(rf"({_NUM})[^\d]{{1,2}}$")
_HEAD_NUMBER = re.compile(r"[^-+\d]{1,2}((?:[\d,]*\.*\d+))$")
_POWER_OF_TEN = re.compile(r"10\^(-?\d+)")
_GROUPED = re.compile(r"^[-+]?(\d{1,3}(,\d{3})*|(\d+))(\.\d+)?$")


class _NotEvaluable(Exception):
    """The expression is outside what :func:`_python_value` computes (module docstring)."""


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.MatMult: operator.matmul,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,  # "10^3" is 10 XOR 3 = 9 to Python, and so to the official rule
    ast.BitAnd: operator.and_,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
    ast.Invert: operator.invert,
    ast.Not: operator.not_,
}
_COMPARE: dict[type, Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_CALLS: dict[str, Callable[..., Any]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "pow": pow,
    "sum": sum,
    "int": int,
    "float": float,
    "bool": bool,
    "complex": complex,
    "divmod": divmod,
    "len": len,
    "ord": ord,
}


def _binary(op: ast.operator, left: Any, right: Any) -> Any:
    fn = _BINARY.get(type(op))
    if fn is None:
        raise _NotEvaluable(type(op).__name__)
    big_power = (
        isinstance(right, int) and abs(right) > _MAX_EXPONENT and isinstance(left, int) and abs(left) > 1
    )
    if isinstance(op, ast.Pow) and big_power:
        raise _NotEvaluable("integer power too large")
    if isinstance(op, ast.LShift) and isinstance(right, int) and right > _MAX_SHIFT and left:
        raise _NotEvaluable("shift too large")
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, (str, bytes, tuple, list)) and isinstance(count, int) and count > _MAX_REPEAT:
                raise _NotEvaluable("sequence repeated too often")
    return fn(left, right)


def _value_of(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp):
        fn = _UNARY.get(type(node.op))
        if fn is None:
            raise _NotEvaluable(type(node.op).__name__)
        return fn(_value_of(node.operand))
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _value_of(node.left), _value_of(node.right))
    if isinstance(node, ast.BoolOp):
        value = _value_of(node.values[0])
        for later in node.values[1:]:
            if (isinstance(node.op, ast.And) and not value) or (isinstance(node.op, ast.Or) and value):
                return value
            value = _value_of(later)
        return value
    if isinstance(node, ast.Compare):
        left = _value_of(node.left)
        for op, comparator in zip(node.ops, node.comparators):
            right = _value_of(comparator)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _value_of(node.body) if _value_of(node.test) else _value_of(node.orelse)
    if isinstance(node, ast.Tuple):
        return tuple(_value_of(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_value_of(e) for e in node.elts]
    if isinstance(node, ast.Set):
        return {_value_of(e) for e in node.elts}
    if isinstance(node, ast.Dict) and all(k is not None for k in node.keys):
        return {_value_of(k): _value_of(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            raise _NotEvaluable("starred call arguments")
        args = [_value_of(a) for a in node.args]
        kwargs = {str(k.arg): _value_of(k.value) for k in node.keywords}
        if node.func.id == "pow" and len(args) == 2 and not kwargs:
            return _binary(ast.Pow(), *args)  # the same size guard as **
        return _CALLS[node.func.id](*args, **kwargs)
    if isinstance(node, ast.Subscript):
        index = node.slice
        if isinstance(index, ast.Slice):
            parts = (index.lower, index.upper, index.step)
            key: Any = slice(*(None if p is None else _value_of(p) for p in parts))
        else:
            key = _value_of(index)
        return _value_of(node.value)[key]
    if isinstance(node, ast.Name) and node.id == "__debug__":
        return True  # a compile-time constant of the interpreter (no -O)
    raise _NotEvaluable(type(node).__name__)


def _python_value(text: str) -> Any:
    """``eval(text)`` for the expressions of the module docstring; raises for anything else
    (as ``eval`` raises on bad syntax, or its evaluation fails)."""
    tree = ast.parse(text.lstrip(" \t"), mode="eval")  # eval skips leading spaces and tabs
    return _value_of(tree.body)


def _clean_text(prediction: str) -> str:
    """Stage 2 of the module docstring, up to (not including) the final evaluation."""
    p = prediction.strip().lower().rstrip(".")
    for word in _REMOVED_WORDS:
        p = p.replace(word, "")
    if "=" in p:
        p = p.split("=")[-1].strip()
    if "≈" in p:
        p = p.split("≈")[-1].strip()
    for mark in ("`", "%", "$", "°"):
        p = p.replace(mark, "")
    if p in ("true", "yes", "false", "no"):
        p = "True" if p in ("true", "yes") else "False"
    if "true" in p or "false" in p:
        p = "True" if "true" in p else "False"
    if "approximately" in p:
        p = p.replace("approximately", "").strip()
    if " or " in p:
        p = p.split(" or ")[0]
    for pattern in (_NUMBER_UNIT, _UNIT_NUMBER, _NUMBER_TAIL, _HEAD_NUMBER):
        m = pattern.match(p)
        if m:
            p = m.group(1)
    if "10^" in p:
        p = _POWER_OF_TEN.sub(r"math.pow(10, \1)", p)
    p = p.replace(" x ", "*").replace(" × ", "*")
    if _GROUPED.match(p):
        p = p.replace(",", "")
    return p or "None"


def finmmr_normalize(prediction: str) -> Any:
    """The value FinMMR's ``normalize`` gives an answer string (None when it has none)."""
    try:
        return _python_value(prediction)
    except Exception:  # noqa: BLE001 - eval's failures are all alike to the official rule
        pass
    try:
        return _python_value(_clean_text(prediction))
    except Exception:  # noqa: BLE001
        return None


def finmmr_get_acc(prediction: str, gold: int | float | bool) -> int:
    """1 or 0 as the official ``get_acc(prediction, gold)`` returns (module docstring, 1-4)."""
    if not isinstance(gold, (int, float, bool)):
        return 0
    try:
        value = finmmr_normalize(prediction)
        if isinstance(value, (tuple, list)):
            value = value[0]
        if value is None:
            return 0
        if isinstance(gold, bool) or isinstance(value, bool):
            return int(value == gold)
        eps = abs(gold) * RELATIVE_EPS
        return int(bool(value >= gold - eps and value <= gold + eps))
    except Exception:  # noqa: BLE001 - the official function answers 0 to any failure
        return 0


def finmmr_acc(prediction: str, gold: int | float | bool) -> int:
    """The CoT evaluation's verdict: the answer check (rule 0), then :func:`finmmr_get_acc`."""
    if not prediction or "none" in prediction.lower():
        return 0
    return finmmr_get_acc(prediction, gold)
