"""Running a Moira reproduction config: the matrix document goes to the experiment matrix
(:mod:`agent.pairs.experiment.matrix`, ``localfin pairs matrix``), in its folder layout
``<out>/matrix/<backbone name>/<windows name>/``; every model call is journaled in the cell
folder, so rerunning resumes.

Baselines: the ``[reproduce] baselines`` list is merged into the document as a ``[baselines]
methods`` table: the baselines of the paper's table and no other (an empty list runs none).

Pairing: ``[experiment] pairing`` says what a seed's Beta and No-Beta runs share
(:class:`agent.pairs.experiment.config.ExperimentConfig`); :func:`pairing_note` says in the
report which was used and what it means for the Beta-against-No-Beta comparison, and every row
carries it.
"""

from __future__ import annotations

import copy
import json
import logging
import math
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.pairs.experiment.matrix import run_matrix
from agent.pairs.experiment.matrix_config import load_matrix, parse_matrix
from agent.pairs.market.metrics import RETURN_NOTE, ZERO_VARIANCE_MARK, table_sharpe
from agent.report.matrix_summary import write_matrix_summary
from agent.reproduce.spec import ReproConfig
from localfin import configfile as cf
from localfin.progress import NULL_PROGRESS, Progress
from serving.chat.backend import Backend
from serving.cluster.endpoints import Endpoints
from serving.models.registry import Registry

__all__ = [
    "MoiraOutcome",
    "FALLBACK_TABLE",
    "with_baselines",
    "pairing_of",
    "pairing_note",
    "expand_cells",
    "placed_spec",
    "placed_factory",
    "run_moira",
    "moira_rows",
    "moira_fallback_rows",
]

#: The title of the fallbacks table of ``reproduction.md``.
FALLBACK_TABLE = (
    "Fallbacks per call type (agent calls whose reply was not used; a shared training counted once, "
    "a warmup shared by A3's conditions with each)"
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MoiraOutcome:
    """What ran: the matrix folder, its cell folders, the path taken and notes for the report."""

    matrix_dir: Path
    cells: tuple[Path, ...]
    path: str  # "matrix": ran through agent.pairs.experiment.matrix
    notes: tuple[str, ...]


def with_baselines(doc: Mapping[str, Any], methods: tuple[str, ...]) -> tuple[dict[str, Any], str]:
    """``doc`` with ``[baselines] methods`` = ``methods`` (the paper's baseline rows of the table;
    none when empty), and a note."""
    merged = cf.merge(copy.deepcopy(dict(doc)), {"baselines": {"methods": list(methods)}})
    if not methods:
        return merged, "baselines run: none (the paper's table reports none)"
    return merged, f"baselines run: {', '.join(methods)}"


def pairing_of(doc: Mapping[str, Any]) -> str:
    """``[experiment] pairing`` of a matrix document (the default: ``paired``)."""
    return str((doc.get("experiment") or {}).get("pairing", "paired"))


def pairing_note(doc: Mapping[str, Any]) -> str:
    """Which pairing the runs used and what it means for the Beta-against-No-Beta comparison."""
    pairing = pairing_of(doc)
    both = set((doc.get("matrix") or {}).get("exposures", ["no_beta", "beta"]))
    per = [
        set(b.get("exposures") or both) if isinstance(b, Mapping) else both for b in doc.get("backbones", [])
    ]
    if not any(len(e) > 1 for e in per):
        return (
            f"pairing: {pairing} (experiment.pairing); no effect here: every backbone runs one exposure, "
            "so no run is compared with the same backbone under the other exposure"
        )
    if pairing == "independent":
        return (
            "pairing: independent (experiment.pairing): each exposure of a seed trains on its own, selects "
            "its own first pair and draws its own seed stream, so a Beta-against-No-Beta difference compares "
            "independent runs and carries the variance of training and selection as well as of sizing"
        )
    return (
        "pairing: paired (experiment.pairing): the Beta and No-Beta runs of a seed share ONE training "
        "phase (No-Beta sizing, as the paper trains) and with it one first test selection, so they differ "
        "only in sizing and in what follows from it; a Beta-against-No-Beta difference is a paired "
        "comparison of one trained agent under two sizings (without the training's own variance, which "
        'the paper\'s three independent runs per setting may include); `pairing = "independent"` gives '
        "each exposure its own training, first selection and seed stream"
    )


def expand_cells(doc: Mapping[str, Any], base_dir: Path = Path(".")) -> Iterator[tuple[str, str, Any, str]]:
    """``(folder, backbone key, ExperimentConfig, experiment TOML text)`` of every cell of the
    matrix document, backbone-major: the matrix's own expansion
    (:meth:`agent.pairs.experiment.matrix_config.MatrixConfig.cells`)."""
    for c in parse_matrix(doc, base_dir=base_dir).cells():
        yield c.folder, c.backbone.key, c.config, c.config_text


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


def placed_spec(cell: Any, placement: Any) -> Any:
    """The backend spec of ``cell``'s engine (its ``[model]``) where ``placement``
    (:class:`agent.reproduce.engine_plan.Placement`) puts it."""
    from dataclasses import replace

    spec = cell.config.model.backend_spec()
    if spec.kind == "vllm":
        spec = replace(spec, engine=replace(spec.engine, layout=placement.layout_for(cell.backbone.key)))
    return spec


def placed_factory(placement: Any) -> Any:
    """The matrix's backend factory that opens each backbone's engine where ``placement`` puts
    it (:func:`placed_spec`)."""
    from serving.open import open_backend

    def factory(cell: Any, reg: Registry) -> Backend:
        return open_backend(placed_spec(cell, placement), reg)

    return factory


def run_moira(
    cfg: ReproConfig,
    out_dir: Path,
    *,
    document: Mapping[str, Any] | None = None,
    backend: Backend | None = None,
    registry: Registry | None = None,
    progress: Progress = NULL_PROGRESS,
    placement: Any = None,
    ray_address: str | None = None,
    endpoints: Endpoints | None = None,
    backend_factory: Any = None,
) -> MoiraOutcome:
    """Run the config's matrix into ``out_dir/matrix`` (``document`` replaces the config's
    document, e.g. the smoke version; ``backend`` serves every cell when given; else
    ``backend_factory`` opens each engine group's backend (the run's served stages,
    :mod:`agent.reproduce.stage_run`) where given; else each backbone's engine opens where
    ``placement`` puts it, or with the engine's defaults; ``ray_address``: its runs as Ray tasks
    on that cluster instead, against each node's servers or ``endpoints``)."""
    doc, note = with_baselines(document if document is not None else cfg.document, cfg.baselines)
    text = f"# written by `localfin reproduce` from {cfg.name} ({cfg.table})\n" + cf.dumps(doc)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "matrix.toml").write_text(text, encoding="utf-8")
    mdir = out_dir / "matrix"
    mcfg = load_matrix(out_dir / "matrix.toml")
    cells = mcfg.cells()  # validates every cell before any engine starts
    notes = [n for n in (note, pairing_note(doc), RETURN_NOTE) if n]
    factory = (lambda cell, reg: _Shared(backend)) if backend is not None else backend_factory
    if factory is None and placement is not None:
        factory = placed_factory(placement)
    run_matrix(
        mcfg,
        mdir,
        config_text=text,
        resume=True,
        registry=registry,
        backend_factory=factory,
        summary=write_matrix_summary,
        progress=progress,
        ray_address=ray_address,
        endpoints=endpoints,
    )
    notes.append(
        "ran through the experiment matrix (agent.pairs.experiment.matrix, as `localfin pairs matrix`)"
    )
    sets = sorted({_manifest(mdir / c.folder).get("prompt_set", "") for c in cells} - {""})
    if sets:
        notes.append("prompt texts: " + "; ".join(sets))
    return MoiraOutcome(mdir, tuple(mdir / c.folder for c in cells), "matrix", tuple(notes))


def _manifest(cell: Path) -> dict[str, Any]:
    p = cell / "manifest.json"
    return json.loads(p.read_text(encoding="utf-8")) if p.is_file() else {}


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
        pairing = _manifest(cell).get("config", {}).get("pairing", "paired")
        groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        for r in doc.get("runs", []):
            variant, exposure, _seed = r["run_id"].rsplit("-", 2)
            groups.setdefault((variant, exposure), []).append(r)
        for (variant, exposure), runs in groups.items():
            rets = [r["metrics"]["cumulative_return"] for r in runs]
            med = sorted(runs, key=lambda r: r["metrics"]["cumulative_return"])[(len(runs) - 1) // 2]
            m = med["metrics"]
            sharpe, flat = table_sharpe(m)
            row = {
                "backbone": backbone,
                "windows": windows,
                "variant": variant,
                "exposure": exposure,
                "pairing": pairing,
                "seeds": len(runs),
                "return_pct": round(100 * m["cumulative_return"], 2),
                "sharpe": round(sharpe, 3) if math.isfinite(sharpe) else None,
                "max_drawdown_pct": round(100 * m["max_drawdown"], 2),
                "return_range_pct": f"{100 * min(rets):.2f}..{100 * max(rets):.2f}",
                "tokens_median_run": _tokens(med),
                "tokens_mean": round(statistics.mean(_tokens(r) for r in runs)),
            }
            if flat:
                row["sharpe_note"] = ZERO_VARIANCE_MARK
            rows.append(row)
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


def moira_fallback_rows(outcome: MoiraOutcome) -> list[dict[str, Any]]:
    """Per cell (backbone, windows) and call type of the agent: the decoding, the training and
    test calls, the fallbacks among them and their kinds (the cells' ``summary.json``)."""
    rows: list[dict[str, Any]] = []
    for cell in outcome.cells:
        summary = cell / "summary.json"
        if not summary.exists():
            continue
        doc = json.loads(summary.read_text(encoding="utf-8"))
        for ct, phases in sorted((doc.get("fallbacks_by_call_type") or {}).items()):
            tr, te = phases.get("train", {}), phases.get("test", {})
            kinds: dict[str, int] = {}
            for d in (tr, te):
                for k, n in (d.get("kinds") or {}).items():
                    kinds[k] = kinds.get(k, 0) + int(n)
            rows.append(
                {
                    "backbone": cell.parent.name,
                    "windows": cell.name,
                    "decoding": doc.get("decoding", "schema"),
                    "call_type": ct,
                    "train_calls": tr.get("calls", 0),
                    "train_fallbacks": tr.get("fallbacks", 0),
                    "test_calls": te.get("calls", 0),
                    "test_fallbacks": te.get("fallbacks", 0),
                    "kinds": ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none",
                }
            )
    return rows
