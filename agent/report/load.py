"""Finding and reading the run folders under a report's input folder.

The input may be one run folder (``steps.parquet`` + ``metrics.json``), an experiment folder
(``runs/<run_id>/...`` with ``summary.json``, ``manifest.json``, ``journal.sqlite``), or any
folder above several of them (a matrix, a rolling study): every folder below it that holds both
files is a run (folders named ``report``, hidden ones and the output folder are skipped). A run's
*group* is its experiment folder relative to the input (the parent of ``runs/``), ``.`` for the
input itself; groups keep runs of different experiments apart.

What is read, all of it written by :mod:`agent.pairs` (nothing is imported from the agents):

* ``steps.parquet`` through :func:`agent.pairs.market.records.read_steps` (required);
* ``metrics.json`` (required): identity (kind, method, exposure, seed), metrics, ``extra``;
* ``training.json`` (Moira's replay cycles, EG-DDQN's episodes) and ``trace.parquet`` (Moira's
  state transitions), when present;
* per experiment: ``summary.json`` (engine tokens by call type), ``manifest.json`` (backbone,
  lifecycle thresholds), else the journal's token totals (:meth:`serving.journal.Journal.token_summary`).

A run whose required files cannot be read is skipped and listed with the reason (the page says
so); an unreadable optional file only drops the panels that need it.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.pairs.market.records import StepRecord, read_steps
from localfin.errors import InputError, LocalfinError

__all__ = ["RunData", "ExperimentInfo", "ReportInput", "find_run_dirs", "load_run", "load_input"]

log = logging.getLogger(__name__)

_SKIP_DIRS = {"report", "__pycache__"}


@dataclass(frozen=True, eq=False)
class RunData:
    """One run as read from its folder.

    ``doc``: the ``metrics.json`` document; ``training``: ``training.json`` or None; ``trace``:
    ``trace.parquet`` as a pandas DataFrame or None; ``backbone``: the model key of a run that
    called a model (``extra.backbone``, ``extra.model``, ``extra.config.model`` or the experiment
    manifest's ``model.key``, the first found; empty for the others);
    ``problems``: what could not be read (optional files)."""

    run_id: str
    path: Path
    group: str
    kind: str
    method: str
    exposure: str
    seed: int | None
    variant: str
    backbone: str
    doc: dict[str, Any]
    steps: tuple[StepRecord, ...]
    training: dict[str, Any] | None = None
    trace: Any = None
    problems: tuple[str, ...] = ()

    @property
    def extra(self) -> dict[str, Any]:
        e = self.doc.get("extra")
        return e if isinstance(e, dict) else {}

    @property
    def anonymized(self) -> bool:
        """Whether the run's prompts named the stocks by aliases (``[experiment] anonymize``)."""
        return bool(self.extra.get("anonymized"))

    @property
    def uses_model(self) -> bool:
        """Whether the run called a model (its ``extra`` counts tokens by call type)."""
        return "tokens_by_call_type" in self.extra or self.kind == "moira"

    @property
    def window(self) -> tuple[str, str]:
        """First and last decision dates of the settled transitions (the test window's sessions
        but the last); ``("", "")`` for a run without transitions."""
        if not self.steps:
            return ("", "")
        return (str(self.steps[0].date), str(self.steps[-1].date))


@dataclass(frozen=True)
class ExperimentInfo:
    """Experiment-level files of one group: ``summary.json``, ``manifest.json`` and the engine's
    token totals by call type (``engine_tokens``: dicts with call_type, calls, prompt_tokens,
    completion_tokens, cached_tokens, latency_s, fallbacks; ``engine_tokens_source`` names the
    file they came from)."""

    group: str
    path: Path
    summary: dict[str, Any] | None = None
    manifest: dict[str, Any] | None = None
    engine_tokens: tuple[dict[str, Any], ...] = ()
    engine_tokens_source: str = ""


@dataclass(frozen=True)
class ReportInput:
    """Everything the report reads: runs (sorted by group, run id), experiments by group, and
    the folders that looked like runs but could not be read (path, reason)."""

    root: Path
    runs: tuple[RunData, ...]
    experiments: Mapping[str, ExperimentInfo] = field(default_factory=dict)
    skipped: tuple[tuple[str, str], ...] = ()


def find_run_dirs(root: str | Path, exclude: Path | None = None) -> list[Path]:
    """Every folder at or below ``root`` holding ``metrics.json`` and ``steps.parquet``, sorted;
    folders named ``report``, hidden folders and ``exclude`` (the output folder) are skipped."""
    r = Path(root)
    if not r.is_dir():
        raise InputError(f"RUN_DIR={r} is not a folder; allowed: a run folder or an experiment folder")
    ex = exclude.resolve() if exclude is not None else None
    out = []
    for dirpath, dirnames, filenames in os.walk(r):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n
            for n in dirnames
            if not n.startswith(".") and n not in _SKIP_DIRS and (ex is None or (d / n).resolve() != ex)
        )
        if "metrics.json" in filenames and "steps.parquet" in filenames:
            out.append(d)
    return sorted(out)


def _group_of(run_dir: Path, root: Path) -> Path:
    return run_dir.parent.parent if run_dir.parent.name == "runs" and run_dir != root else run_dir


def _read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise InputError(f"{path} holds {type(doc).__name__}; allowed: a JSON object")
    return doc


def _seed(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def load_run(run_dir: str | Path, root: str | Path | None = None, backbone: str = "") -> RunData:
    """Read one run folder (see the module doc). ``backbone``: the experiment's model key, used
    when the run called a model and its ``extra`` names none. Raises InputError when
    ``metrics.json`` or ``steps.parquet`` is unreadable."""
    d = Path(run_dir)
    base = Path(root) if root is not None else d
    doc = _read_json(d / "metrics.json")
    steps = tuple(read_steps(d / "steps.parquet"))
    for i, s in enumerate(steps):
        if not (isinstance(s.realized, (int, float)) and math.isfinite(s.realized)):
            raise InputError(
                f"{d / 'steps.parquet'} row {i}: realized={s.realized!r}; allowed: a finite return"
            )
    problems: list[str] = []
    training = None
    if (d / "training.json").is_file():
        try:
            training = _read_json(d / "training.json")
        except InputError as exc:
            problems.append(str(exc))
    trace = None
    if (d / "trace.parquet").is_file():
        try:
            import pandas as pd

            trace = pd.read_parquet(d / "trace.parquet")
        except (OSError, ValueError, ImportError) as exc:
            problems.append(f"cannot read {d / 'trace.parquet'}: {exc}")
    extra = doc.get("extra") if isinstance(doc.get("extra"), dict) else {}
    group = _group_of(d, base)
    rel = os.path.relpath(group, base) if group != base else "."
    run = RunData(
        run_id=str(doc.get("run_id") or d.name),
        path=d,
        group=rel.replace(os.sep, "/"),
        kind=str(doc.get("kind") or ""),
        method=str(doc.get("method") or doc.get("kind") or "unknown"),
        exposure=str(doc.get("exposure") or ""),
        seed=_seed(doc.get("seed")),
        variant=str(extra.get("variant") or ""),
        backbone="",
        doc=doc,
        steps=steps,
        training=training,
        trace=trace,
        problems=tuple(problems),
    )
    cfg = extra.get("config") if isinstance(extra.get("config"), dict) else {}
    model = next(
        (
            m
            for m in (extra.get("backbone"), extra.get("model"), cfg.get("model"))
            if isinstance(m, str) and m
        ),
        "",
    )
    if run.uses_model:
        object.__setattr__(run, "backbone", str(model or backbone))
    return run


def _engine_tokens(group_dir: Path, summary: dict[str, Any] | None) -> tuple[tuple[dict[str, Any], ...], str]:
    rows = (summary or {}).get("tokens_by_call_type_engine")
    if isinstance(rows, list) and rows:
        return tuple(r for r in rows if isinstance(r, dict)), "summary.json"
    journal = group_dir / "journal.sqlite"
    if not journal.is_file():
        return (), ""
    try:
        from serving.journal import Journal

        with Journal(journal) as j:
            return tuple(dict(t.__dict__) for t in j.token_summary()), "journal.sqlite"
    except LocalfinError as exc:
        log.warning("cannot read the token totals of %s: %s", journal, exc)
        return (), ""


def load_experiment(group_dir: Path, group: str) -> ExperimentInfo:
    """The experiment-level files of one group folder (each optional)."""
    summary = manifest = None
    for name in ("summary.json", "manifest.json"):
        p = group_dir / name
        if not p.is_file():
            continue
        try:
            doc = _read_json(p)
        except InputError as exc:
            log.warning("%s", exc)
            continue
        if name == "summary.json":
            summary = doc
        else:
            manifest = doc
    tokens, source = _engine_tokens(group_dir, summary)
    return ExperimentInfo(group, group_dir, summary, manifest, tokens, source)


def _manifest_model(info: ExperimentInfo) -> str:
    m = (info.manifest or {}).get("model")
    return str(m.get("key") or "") if isinstance(m, dict) else ""


def load_input(root: str | Path, exclude: Path | None = None) -> ReportInput:
    """Every readable run at or below ``root`` and the experiment files of their groups."""
    r = Path(root)
    dirs = find_run_dirs(r, exclude)
    experiments: dict[str, ExperimentInfo] = {}
    runs: list[RunData] = []
    skipped: list[tuple[str, str]] = []
    for d in dirs:
        gdir = _group_of(d, r)
        rel = (os.path.relpath(gdir, r) if gdir != r else ".").replace(os.sep, "/")
        if rel not in experiments:
            experiments[rel] = load_experiment(gdir, rel)
        try:
            runs.append(load_run(d, r, backbone=_manifest_model(experiments[rel])))
        except InputError as exc:
            log.warning("skipping run folder %s: %s", d, exc)
            skipped.append((os.path.relpath(d, r), str(exc)))
    runs.sort(key=lambda x: (x.group, x.run_id))
    ids = [(x.group, x.run_id) for x in runs]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise InputError(f"run ids repeated within one experiment folder: {dup}; allowed: unique run ids")
    return ReportInput(r, tuple(runs), experiments, tuple(skipped))
