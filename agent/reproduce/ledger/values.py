"""Values as the ledger compares them: the canonical plain form (:func:`canon`), the digest of a
long value (:func:`digest`) and equality of two values once canonical (:func:`same_value`)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localfin import configfile as cf

__all__ = ["canon", "digest", "same_value"]


def canon(value: Any) -> Any:
    """``value`` in the plain form values are compared in: dataclasses as tables, tuples as
    lists, paths and dates as strings, whole floats as integers."""
    value = cf.plain(value) if not isinstance(value, (str, bytes)) else value
    if isinstance(value, Mapping):
        return {str(k): canon(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [canon(v) for v in value]
    if isinstance(value, (dt.date, Path)):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


def digest(value: Any) -> str:
    """The first 12 hex digits of the sha256 of ``value``'s canonical JSON."""
    text = json.dumps(canon(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


def same_value(a: Any, b: Any) -> bool:
    """Whether two values are equal once canonical (floats to 1e-9 relative)."""
    a, b = canon(a), canon(b)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b
