"""The one JSON-lines record format every benchmark prints.

One line is one measured figure::

    {"benchmark": "kernels", "case": "rescreen", "metric": "time", "value": 0.74, "unit": "s",
     "reference": {"name": "statsmodels coint", "value": 1448.0}, "ratio": 1945.2,
     "params": {"pairs": 45, "days": 300, ...}, "machine": {"cpus": 2, "loadavg": [...], ...}}

- ``benchmark``: the benchmark's name (``kernels``, ``retrieval``, ``serving``,
  ``cpu_settings``, ``agent``, ``gpu``, ...); ``case``: what was run; ``metric``: what was measured.
- ``value`` is a number (or a short string / ``None`` for status records such as a skip); ``unit``
  is one of :data:`UNITS`.
- ``reference``: the baseline measured in the same run (name and value, same unit), or ``None``.
- ``ratio``: how many times better than the reference; above 1 means ours is better, whichever
  way the metric points (reference/ours for times, ours/reference for rates).
- ``params``: the knobs of this point (sizes, concurrency, backend, ...); ``params["headline"]``
  marks the records that ``localfin bench all`` puts in its summary table.
- ``machine``: CPU count and model, load average when the record was taken, Python version.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = [
    "UNITS",
    "Record",
    "RecordWriter",
    "machine_info",
    "parse_record",
    "read_records",
    "speedup",
]

#: Units a record may carry.
UNITS = (
    "s",
    "ms",
    "us",
    "tokens/s",
    "requests/s",
    "texts/s",
    "GFLOP/s",
    "tokens",
    "count",
    "fraction",
    "x",
    "GiB",
    "",
)

_FIELDS = ("benchmark", "case", "metric", "value", "unit", "reference", "ratio", "params", "machine")


def speedup(ours: float | None, reference: float | None, *, lower_is_better: bool) -> float | None:
    """Times better than the reference (> 1: ours better); ``None`` when either side is missing
    or zero."""
    if ours is None or reference is None or ours <= 0 or reference <= 0:
        return None
    return reference / ours if lower_is_better else ours / reference


@dataclass(frozen=True)
class Record:
    """One measured figure (see the module docstring for the fields)."""

    benchmark: str
    case: str
    metric: str
    value: float | int | str | bool | None
    unit: str
    reference: Mapping[str, Any] | None = None
    ratio: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    machine: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("benchmark", "case", "metric"):
            v = getattr(self, name)
            if not isinstance(v, str) or not v:
                raise ValueError(f"Record.{name}={v!r}; allowed: a non-empty string")
        if self.unit not in UNITS:
            raise ValueError(f"Record.unit={self.unit!r}; allowed: {', '.join(repr(u) for u in UNITS)}")
        if self.value is not None and not isinstance(self.value, (int, float, str, bool)):
            raise ValueError(f"Record.value={self.value!r}; allowed: a number, a string or None")
        if self.reference is not None and (
            not isinstance(self.reference, Mapping) or not {"name", "value"} <= set(self.reference)
        ):
            raise ValueError(f"Record.reference={self.reference!r}; allowed: None or {{name, value}}")
        if self.ratio is not None and not isinstance(self.ratio, (int, float)):
            raise ValueError(f"Record.ratio={self.ratio!r}; allowed: a number or None")
        if not isinstance(self.params, Mapping) or not isinstance(self.machine, Mapping):
            raise ValueError("Record.params and Record.machine must be mappings")

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["params"] = dict(self.params)
        out["machine"] = dict(self.machine)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), default=_jsonable, allow_nan=False)

    @property
    def headline(self) -> bool:
        return bool(self.params.get("headline"))


def _jsonable(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info() -> dict[str, Any]:
    """Static facts about this machine (CPU count and model, Python); the load is added per
    record by :class:`RecordWriter`."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        usable = os.cpu_count() or 0
    return {
        "cpus": os.cpu_count(),
        "cpus_usable": usable,
        "cpu_model": _cpu_model(),
        "python": platform.python_version(),
        "system": platform.system(),
    }


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


class RecordWriter:
    """Prints records as JSON lines (to ``stream``, default stdout) and keeps them.

    Args:
        benchmark: the ``benchmark`` field of every record this writer makes.
        stream: where lines go (``None``: ``sys.stdout`` at write time).
        extra_machine: facts to add to ``machine`` (e.g. a GPU name).
    """

    def __init__(
        self, benchmark: str, stream: IO[str] | None = None, extra_machine: Mapping[str, Any] | None = None
    ) -> None:
        self.benchmark = benchmark
        self._stream = stream
        self._machine = {**machine_info(), **(extra_machine or {})}
        self.records: list[Record] = []

    def emit(self, record: Record) -> Record:
        stream = self._stream or sys.stdout
        stream.write(record.to_json() + "\n")
        stream.flush()
        self.records.append(record)
        return record

    def metric(
        self,
        case: str,
        metric: str,
        value: float | int | str | bool | None,
        unit: str,
        *,
        reference: str | None = None,
        reference_value: float | None = None,
        lower_is_better: bool | None = None,
        **params: Any,
    ) -> Record:
        """Make, print and keep one record. With ``reference`` and ``reference_value`` the ratio
        is computed (``lower_is_better`` must then say which way the metric points)."""
        ref = None
        ratio = None
        if reference is not None:
            ref = {"name": reference, "value": _round(reference_value)}
            if lower_is_better is None:
                raise ValueError(f"{case}/{metric}: lower_is_better must be given with a reference")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                r = speedup(float(value), reference_value, lower_is_better=lower_is_better)
                ratio = None if r is None else _round(r)
        machine = {**self._machine, "loadavg": [round(v, 2) for v in os.getloadavg()]}
        return self.emit(
            Record(
                benchmark=self.benchmark,
                case=case,
                metric=metric,
                value=_round(value),
                unit=unit,
                reference=ref,
                ratio=ratio,
                params={k: _round(v) for k, v in params.items()},
                machine=machine,
            )
        )


def parse_record(line: str | Mapping[str, Any]) -> Record:
    """A :class:`Record` from one JSON line (or its dict); ``ValueError`` naming what is wrong."""
    data = json.loads(line) if isinstance(line, str) else dict(line)
    if not isinstance(data, dict):
        raise ValueError(f"record is not a JSON object: {line!r:.80}")
    missing = [f for f in _FIELDS if f not in data]
    extra = [k for k in data if k not in _FIELDS]
    if missing or extra:
        raise ValueError(f"record fields: missing {missing}, unexpected {extra}; allowed: {list(_FIELDS)}")
    return Record(**data)


def read_records(lines: Iterable[str] | str | Path) -> Iterator[Record]:
    """Records from a JSON-lines file (path) or lines; blank lines are skipped."""
    if isinstance(lines, (str, Path)):
        lines = Path(lines).read_text(encoding="utf-8").splitlines()
    for line in lines:
        if line.strip():
            yield parse_record(line)
