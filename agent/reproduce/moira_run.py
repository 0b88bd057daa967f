"""Running a Moira reproduction config: the matrix document goes to the experiment matrix
(:mod:`agent.pairs.experiment.matrix`, ``localfin pairs matrix``) when this build has it, else each
(backbone, windows set) cell goes to :func:`agent.pairs.experiment.run.run_experiment` (``localfin
pairs run``) in the matrix's folder layout ``<out>/matrix/<backbone name>/<windows name>/``.
Either way every model call is journaled in the cell folder, so rerunning resumes.

Baselines: the ``[reproduce] baselines`` list becomes a ``[baselines] methods`` table when the
experiment config of this build accepts one; otherwise the run goes on without them and the
report says so.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import logging
import statistics
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.reproduce.spec import ReproConfig
from agent.reproduce.tomlw import dumps
from localfin.errors import ConfigError
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend

__all__ = ["MoiraOutcome", "with_baselines", "expand_cells", "run_moira", "moira_rows"]

log = logging.getLogger(__name__)

_MATRIX_KEYS = ("matrix", "backbones", "windows")
_WINDOW_KEYS = ("train_start", "train_end", "test_start", "test_end")


@dataclass(frozen=True)
class MoiraOutcome:
    """What ran: the matrix folder, its cell folders, the path taken and notes for the report."""

    matrix_dir: Path
    cells: tuple[Path, ...]
    path: str  # "matrix" (agent.pairs.experiment.matrix) or "experiments" (one run_experiment per cell)
    notes: tuple[str, ...]


def with_baselines(doc: Mapping[str, Any], methods: tuple[str, ...]) -> tuple[dict[str, Any], str]:
    """``doc`` with a ``[baselines]`` table when the experiment config supports one, and a note."""
    out = copy.deepcopy(dict(doc))
    if not methods:
        return out, ""
    from agent.pairs.experiment import config as pc

    if "baselines" in getattr(pc, "_TOP", ()):
        out["baselines"] = {"methods": list(methods)}
        return out, f"baselines run: {', '.join(methods)}"
    return out, (
        f"baselines NOT run ({', '.join(methods)}): this build's experiment config has no [baselines] "
        "table; run them with the baselines command once it is merged"
    )


def _backbones(doc: Mapping[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for b in doc.get("backbones", []):
        if isinstance(b, str):
            out.append((b, b, {}))
        else:
            extra = {k: v for k, v in b.items() if k not in ("key", "name", "model_path")}
            out.append((b["key"], b.get("name", b["key"]), extra))
    return out


def _windows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = doc.get("windows", [])
    return list(raw) if isinstance(raw, list) else [{"name": "main", **raw}]


def expand_cells(doc: Mapping[str, Any]) -> Iterator[tuple[str, str, Any, str]]:
    """``(folder, backbone key, ExperimentConfig, experiment TOML text)`` of every cell,
    backbone-major (the matrix's order and folder names)."""
    from agent.pairs.experiment.config import parse_config

    m = doc.get("matrix", {})
    base = {k: v for k, v in doc.items() if k not in _MATRIX_KEYS}
    for key, name, over in _backbones(doc):
        for w in _windows(doc):
            d = copy.deepcopy(base)
            exp = dict(d.get("experiment", {}))
            exp["name"] = f"{m.get('name', 'repro')}-{name}-{w['name']}"[:64]
            exp["seeds"] = list(m.get("seeds", [0, 1, 2]))
            exp["exposures"] = list(m.get("exposures", exp.get("exposures", ["no_beta", "beta"])))
            d["experiment"] = exp
            d["windows"] = {k: w[k] for k in _WINDOW_KEYS}
            d["model"] = {**dict(d.get("model", {})), **over, "backbone": key}
            text = dumps(d)
            try:
                cfg = parse_config(tomllib.loads(text))
            except ConfigError as exc:
                raise ConfigError(f"experiment of backbone {name!r}, windows {w['name']!r}: {exc}") from exc
            yield f"{name}/{w['name']}", key, cfg, text


class _Shared:
    """A backend handed to several runners that must not close it (the caller does)."""

    def __init__(self, inner: Backend) -> None:
        self._inner = inner

    def chat(self, requests: Any) -> Any:
        return self._inner.chat(requests)

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _has_matrix() -> bool:
    return importlib.util.find_spec("agent.pairs.experiment.matrix") is not None


def run_moira(
    cfg: ReproConfig,
    out_dir: Path,
    *,
    document: Mapping[str, Any] | None = None,
    backend: Backend | None = None,
    registry: Any = None,
    progress: Progress = NULL_PROGRESS,
) -> MoiraOutcome:
    """Run the config's matrix into ``out_dir/matrix`` (``document`` replaces the config's
    document, e.g. the smoke version; ``backend`` serves every cell when given)."""
    doc, note = with_baselines(document if document is not None else cfg.document, cfg.baselines)
    text = f"# written by `localfin reproduce` from {cfg.name} ({cfg.table})\n" + dumps(doc)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "matrix.toml").write_text(text, encoding="utf-8")
    mdir = out_dir / "matrix"
    cells = list(expand_cells(doc))  # validates every cell before any engine starts
    notes = [note] if note else []
    if _has_matrix():
        from agent.pairs.experiment.matrix import run_matrix
        from agent.pairs.experiment.matrix_config import load_matrix

        mcfg = load_matrix(out_dir / "matrix.toml")
        factory = None if backend is None else (lambda cell, reg: _Shared(backend))
        run_matrix(
            mcfg, mdir, config_text=text, resume=True, registry=registry, backend_factory=factory,
            progress=progress,
        )  # fmt: skip
        path = "matrix"
        notes.append(
            "ran through the experiment matrix (agent.pairs.experiment.matrix, as `localfin pairs matrix`)"
        )
    else:
        from agent.pairs.experiment.run import build_backend, run_experiment

        notes.append(
            "ran cell by cell through run_experiment (this build has no agent.pairs.experiment.matrix)"
        )
        current: tuple[str, Backend] | None = None
        try:
            for folder, key, ecfg, etext in cells:
                if backend is not None:
                    be: Backend = _Shared(backend)
                else:
                    if current is None or current[0] != key:
                        if current is not None:
                            current[1].close()
                        current = (key, build_backend(ecfg, registry))
                    be = _Shared(current[1])
                run_experiment(
                    ecfg, mdir / folder, config_text=etext, backend=be, resume=True, progress=progress
                )
        finally:
            if current is not None:
                current[1].close()
        path = "experiments"
    return MoiraOutcome(mdir, tuple(mdir / c[0] for c in cells), path, tuple(notes))


def _tokens(run: Mapping[str, Any]) -> int:
    by = run.get("extra", {}).get("tokens_by_call_type", {})
    return int(sum(v.get("prompt_tokens", 0) + v.get("completion_tokens", 0) for v in by.values()))


def moira_rows(outcome: MoiraOutcome) -> list[dict[str, Any]]:
    """Per setting (backbone, windows, variant, exposure): the median-return run across seeds
    (return, Sharpe, max drawdown in %), the min..max of return across seeds and chat tokens;
    then, for ablation variants, the full variant's median return minus theirs (points)."""
    rows: list[dict[str, Any]] = []
    for cell in outcome.cells:
        summary = cell / "summary.json"
        if not summary.exists():
            continue
        doc = json.loads(summary.read_text(encoding="utf-8"))
        backbone, windows = cell.parent.name, cell.name
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for r in doc.get("runs", []):
            variant, exposure, _seed = r["run_id"].rsplit("-", 2)
            groups.setdefault((variant, exposure), []).append(r)
        for (variant, exposure), runs in groups.items():
            rets = [r["metrics"]["cumulative_return"] for r in runs]
            med = sorted(runs, key=lambda r: r["metrics"]["cumulative_return"])[(len(runs) - 1) // 2]
            m = med["metrics"]
            rows.append(
                {
                    "backbone": backbone,
                    "windows": windows,
                    "variant": variant,
                    "exposure": exposure,
                    "seeds": len(runs),
                    "return_pct": round(100 * m["cumulative_return"], 2),
                    "sharpe": None if m.get("sharpe") is None else round(m["sharpe"], 3),
                    "max_drawdown_pct": round(100 * m["max_drawdown"], 2),
                    "return_range_pct": f"{100 * min(rets):.2f}..{100 * max(rets):.2f}",
                    "tokens_median_run": _tokens(med),
                    "tokens_mean": round(statistics.mean(_tokens(r) for r in runs)),
                }
            )
    full = {(r["backbone"], r["windows"], r["exposure"]): r for r in rows if r["variant"] == "full"}
    for r in list(rows):
        ref = full.get((r["backbone"], r["windows"], r["exposure"]))
        if r["variant"] != "full" and ref is not None:
            rows.append(
                {
                    "backbone": r["backbone"],
                    "windows": r["windows"],
                    "variant": f"full minus {r['variant']}",
                    "exposure": r["exposure"],
                    "return_pct": round(ref["return_pct"] - r["return_pct"], 2),
                }
            )
    return rows
