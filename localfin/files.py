"""Writing run files whole or not at all, and reading them back with an error that names them.

A run folder's tables and reports are written to a temporary name beside their target and
renamed into place (:func:`atomic_target`, :func:`write_text`, :func:`write_bytes`): a write
that fails half-way (a full disk, a file-size limit, an I/O error) leaves the previous file, or
none, never a torn one that a later read would take as whole. The failure is one
:class:`~localfin.errors.WriteFailedError` (exit code 5) naming the path and the system's
reason; the temporary file is removed.

Reading: :func:`read_parquet` and :func:`check_parquet` / :func:`check_json` turn a torn or
foreign file into a :class:`~localfin.errors.DamagedFileError` (exit code 6) naming it, and a
missing one into an :class:`~localfin.errors.InputError`.
"""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from localfin.errors import DamagedFileError, InputError, WriteFailedError

__all__ = [
    "write_failed",
    "atomic_target",
    "write_text",
    "write_bytes",
    "read_parquet",
    "check_parquet",
    "check_json",
]

#: errno values that mean "no room": the advice is to free space
_NO_ROOM = {errno.ENOSPC, errno.EFBIG, errno.EDQUOT}


def write_failed(path: str | Path, exc: BaseException) -> WriteFailedError:
    """The :class:`WriteFailedError` for a failed write of ``path`` (``exc``: the OSError or the
    library error that reports it)."""
    code = getattr(exc, "errno", None)
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    if code in _NO_ROOM:
        advice = "free space (or raise the file-size limit), then rerun with --resume"
    else:
        advice = "fix the cause, then rerun with --resume"
    err = WriteFailedError(f"cannot write {path}: {reason}; {advice} (journaled calls are kept)")
    err.errno = code
    err.filename = str(path)
    return err


def _tmp_for(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends normally it is renamed to
    ``path``. An ``OSError`` in the block (or in the rename) becomes a WriteFailedError naming
    ``path``; the temporary file is removed whenever the block fails."""
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failed(p.parent, exc) from exc
    tmp = _tmp_for(p)
    try:
        yield tmp
        os.replace(tmp, p)
    except OSError as exc:
        _remove(tmp)
        if isinstance(exc, WriteFailedError):
            raise
        raise write_failed(p, exc) from exc
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: Path) -> None:
    try:
        tmp.unlink()
    except FileNotFoundError:
        pass
    except OSError:  # best effort: the target is untouched either way
        pass


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all."""
    with atomic_target(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` whole or not at all."""
    with atomic_target(path) as tmp:
        tmp.write_bytes(data)
    return Path(path)


def _arrow_errors() -> tuple[type[BaseException], ...]:
    try:
        import pyarrow as pa
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        return (OSError, ValueError)
    return (OSError, ValueError, pa.ArrowException)


def read_parquet(path: str | Path, columns: Sequence[str] | None = None) -> Any:
    """``pandas.read_parquet(path, columns)``; a missing file is an InputError, a torn or
    unreadable one a DamagedFileError naming it."""
    import pandas as pd

    p = Path(path)
    if not p.is_file():
        raise InputError(f"no file at {p}")
    try:
        return pd.read_parquet(p, columns=list(columns) if columns is not None else None)
    except _arrow_errors() as exc:
        raise DamagedFileError(
            f"{p} is not a readable Parquet file ({_short(exc)}): torn or not written by localfin"
        ) from exc


def check_parquet(path: str | Path) -> str | None:
    """What is wrong with the Parquet file ``path`` (None: its footer and row groups read)."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        pq.ParquetFile(path).read_row_groups(list(range(meta.num_row_groups)))
    except _arrow_errors() as exc:
        return f"not a readable Parquet file ({_short(exc)})"
    return None


def check_json(path: str | Path, *, lines: bool = False) -> str | None:
    """What is wrong with the JSON file ``path`` (``lines``: JSON Lines); None when it parses."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"cannot read it ({_short(exc)})"
    parts = enumerate(text.splitlines(), 1) if lines else [(0, text)]
    for n, part in parts:
        if not part.strip() and lines:
            continue
        try:
            json.loads(part)
        except json.JSONDecodeError as exc:
            where = f"line {n}: " if lines else ""
            return f"not valid JSON ({where}{exc.msg} at char {exc.pos}): torn or not written by localfin"
    return None


def _short(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return (text[:160] + "...") if len(text) > 160 else text or type(exc).__name__
