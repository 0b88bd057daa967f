"""The experiment matrix file: parsing, validation and expansion into experiment configs.

The format is documented in :mod:`agent.pairs.experiment.matrix` (module docstring). Here: a matrix TOML
document -> :class:`MatrixConfig` (frozen, validated, every error names the key) ->
:meth:`MatrixConfig.cells`, one :class:`Cell` per (backbone, windows set), each holding the TOML
text of an ordinary experiment config (:mod:`agent.pairs.experiment.config`) that :func:`parse_config`
accepted. Tables the matrix does not know are passed through to the experiment config
untouched (so an experiment table added later, e.g. ``[baselines]``, works here unchanged; the
experiment config validates them).
"""

from __future__ import annotations

import copy
import datetime as dt
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from agent.pairs.experiment.config import ExperimentConfig, ModelConfig, parse_config
from agent.pairs.experiment.folder_config import folder_copy
from agent.pairs.market.settlement import EXPOSURES
from localfin import configfile as cf
from localfin.errors import ConfigError

__all__ = [
    "DEFAULT_SEEDS",
    "Backbone",
    "WindowSet",
    "Cell",
    "MatrixConfig",
    "parse_matrix",
    "load_matrix",
]

#: Seeds of a setting when ``[matrix].seeds`` is not given (3 seeds per setting).
DEFAULT_SEEDS = (0, 1, 2)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")
_WINDOW_KEYS = ("train_start", "train_end", "test_start", "test_end")
#: ``[model]`` keys a backbone entry may override (everything but ``backbone``, set by ``key``).
_MODEL_KEYS = tuple(f.name for f in fields(ModelConfig) if f.name != "backbone")
#: Model settings that make two backbone entries need two engines (the others are per request).
_ENGINE_KEYS = (
    "backend",
    "base_url",
    "max_num_seqs",
    "kv_cache_gib",
    "quantization",
    "pipeline_parallel",
    "batch_invariant",
    "async_scheduling",
    "worker_start_method",
    "max_model_len",
    "max_num_batched_tokens",
)


def _name(value: Any, key: str) -> str:
    if not isinstance(value, str) or not _NAME.match(value):
        raise ConfigError(
            f"{key}={value!r}; allowed: 1-48 letters, digits, '_', '-', '.' (it names a folder)"
        )
    return value


@dataclass(frozen=True)
class Backbone:
    """One backbone configuration of the matrix.

    name: folder name of its experiments (default: the registry key).
    key: registry key (``localfin models list``); becomes ``[model].backbone``.
    model: ``[model]`` overrides for this backbone (thinking, temperature, backend, base_url, ...),
        applied over the base's ``[model]`` table.
    model_path: weights folder for this key (for ``built`` test models; empty: the registry's;
        a ``built`` model without one is built into the model cache on first use).
    exposures: the exposures this backbone's experiments run (empty: the matrix's); a table
        whose settings pair one backbone with one exposure (the paper's A1-A4 rows:
        GPT-4.1-mini Beta, GPT-5.4-mini No-Beta) runs only those.
    """

    name: str
    key: str
    model: Mapping[str, Any] = field(default_factory=dict)
    model_path: str = ""
    exposures: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _name(self.name, "backbones.name")
        if any(e not in EXPOSURES for e in self.exposures) or len(set(self.exposures)) != len(self.exposures):
            raise ConfigError(
                f"backbones.exposures={list(self.exposures)} of backbone {self.name!r}; allowed: distinct "
                f"entries of {', '.join(EXPOSURES)} (empty: the matrix's)"
            )
        if not isinstance(self.key, str) or not self.key:
            raise ConfigError(f"backbones.key={self.key!r}; allowed: a registry key such as smollm2-135m")
        unknown = sorted(set(self.model) - set(_MODEL_KEYS))
        if unknown:
            raise ConfigError(
                f"unknown key(s) {', '.join('backbones.' + k for k in unknown)} of backbone {self.name!r}; "
                f"allowed: name, key, model_path, exposures, {', '.join(_MODEL_KEYS)}"
            )


@dataclass(frozen=True)
class WindowSet:
    """A named training + test window (A1 long horizon, A2 another regime, ...).

    name: the windows set's name (its folder in the matrix).
    train_start, train_end, test_start, test_end: the windows (inclusive dates, as ``[windows]``
        of an experiment).
    """

    name: str
    train_start: dt.date
    train_end: dt.date
    test_start: dt.date
    test_end: dt.date

    def __post_init__(self) -> None:
        _name(self.name, "windows.name")

    def table(self) -> dict[str, str]:
        return {k: getattr(self, k).isoformat() for k in _WINDOW_KEYS}


@dataclass(frozen=True)
class Cell:
    """One experiment of the matrix: a backbone on a windows set, every seed x exposure x
    variant of the matrix. ``folder`` is relative to the matrix folder; ``config_text`` is the
    experiment TOML written into it (every path absolute:
    :func:`agent.pairs.experiment.folder_config.folder_copy`)."""

    backbone: Backbone
    windows: WindowSet
    folder: str
    config: ExperimentConfig
    config_text: str

    @property
    def engine_key(self) -> tuple[Any, ...]:
        """Cells with equal keys share one engine (same model, weights and engine settings)."""
        m = self.config.model
        return (m.backbone, self.backbone.model_path, *(getattr(m, k) for k in _ENGINE_KEYS))


@dataclass(frozen=True)
class MatrixConfig:
    """A whole matrix: the merged experiment document (``base`` + this file's tables) expanded
    over backbones x windows sets; seeds, exposures and variants are inside each experiment.

    ``source_dir`` is the matrix file's folder (relative ``store`` and ``base`` resolve there);
    ``synthetic_market``: the runner writes the bundled synthetic market to
    ``<out>/market.sqlite`` and every experiment uses it as its store."""

    name: str
    document: Mapping[str, Any]
    backbones: tuple[Backbone, ...]
    windows: tuple[WindowSet, ...]
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    exposures: tuple[str, ...] = EXPOSURES
    synthetic_market: bool = False
    source_dir: Path = Path(".")
    #: the matrix file (named in the errors of its expanded experiments); empty: none
    source_file: str = ""

    def __post_init__(self) -> None:
        _name(self.name, "matrix.name")
        if not self.backbones:
            raise ConfigError("backbones is empty; allowed: at least one registry key")
        for kind, items in (("backbones", self.backbones), ("windows", self.windows)):
            names = [x.name for x in items]
            if len(set(names)) != len(names):
                raise ConfigError(f"{kind} names {names} repeat; allowed: distinct names (they name folders)")
        if not self.windows:
            raise ConfigError("windows is empty; allowed: a [windows] table or [[windows]] entries")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"matrix.seeds={list(self.seeds)}; allowed: distinct integers, at least one")
        if not self.exposures or any(e not in EXPOSURES for e in self.exposures):
            raise ConfigError(f"matrix.exposures={list(self.exposures)}; allowed: {', '.join(EXPOSURES)}")

    def cells(self, store: Path | None = None) -> list[Cell]:
        """Every experiment of the matrix, backbone-major (the order the runner uses).

        ``store``: the market store to use instead of the document's (the synthetic market the
        runner wrote). Each cell's config is parsed and validated here, so a bad table fails
        before any engine starts.

        A FinMem baseline with a fixed ``[baselines.finmem] model`` (the paper's single FinMem
        row) runs only in the experiments of the backbone with that registry key; the others
        run every other baseline. A fixed key that no backbone has is an error."""
        fixed = _finmem_model(self.document)
        if fixed and fixed not in {b.key for b in self.backbones}:
            raise ConfigError(
                f"baselines.finmem.model={fixed!r} is not the key of a backbone of this matrix "
                f"({', '.join(b.key for b in self.backbones)}); add it as a [[backbones]] entry (FinMem's "
                "row runs in its experiments)"
            )
        out = []
        for b in self.backbones:
            for w in self.windows:
                doc = copy.deepcopy(dict(self.document))
                exp = dict(doc.get("experiment", {}))
                exp["name"] = f"{self.name}-{b.name}-{w.name}"[:64]
                exp["seeds"] = list(self.seeds)
                exp["exposures"] = list(b.exposures or self.exposures)
                if store is not None:
                    exp["store"] = str(store)
                elif "store" in exp:
                    p = Path(str(exp["store"])).expanduser()
                    exp["store"] = str(p if p.is_absolute() else (self.source_dir / p).resolve())
                doc["experiment"] = exp
                prompt = dict(doc.get("prompt") or {})
                if isinstance(prompt.get("dir"), str) and prompt["dir"]:
                    d = Path(prompt["dir"]).expanduser()
                    prompt["dir"] = str(d if d.is_absolute() else (self.source_dir / d).resolve())
                    doc["prompt"] = prompt
                doc["windows"] = w.table()
                doc["model"] = {**dict(doc.get("model", {})), **dict(b.model), "backbone": b.key}
                if fixed and fixed != b.key:
                    _drop_finmem(doc)
                text = cf.dumps(_ordered(doc))
                try:
                    cfg = parse_config(cf.loads_toml(text, "the expanded experiment"))
                except ConfigError as exc:
                    where = f"experiment of backbone {b.name!r}, windows {w.name!r}"
                    if self.source_file:
                        where = f"file {self.source_file}, {where}"
                    raise ConfigError(f"{where}: {exc}") from exc
                # the text the experiment folder holds (a store left to the default stated)
                out.append(Cell(b, w, f"{b.name}/{w.name}", cfg, folder_copy(text, cfg)))
        return out


def _finmem_model(doc: Mapping[str, Any]) -> str:
    """``[baselines.finmem] model`` of a document ("" when FinMem follows each backbone)."""
    fm = (doc.get("baselines") or {}).get("finmem") if isinstance(doc.get("baselines"), Mapping) else None
    return str(fm.get("model", "")) if isinstance(fm, Mapping) else ""


def _drop_finmem(doc: dict[str, Any]) -> None:
    """Remove FinMem from the document's baselines (an absent ``methods`` means all six)."""
    from agent.pairs.baselines.config import BASELINE_METHODS

    base = dict(doc.get("baselines") or {})
    base["methods"] = [m for m in base.get("methods", BASELINE_METHODS) if m != "finmem"]
    doc["baselines"] = base


def _ordered(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The experiment tables in the order of agent/pairs/configs/*.toml (unknown ones last)."""
    order = ("experiment", "windows", "model", "prompt", "policy", "selection", "screen", "lifecycle")
    head = {k: doc[k] for k in order if k in doc}
    return {**head, **{k: v for k, v in doc.items() if k not in head}}


@dataclass(frozen=True)
class _MatrixTable:
    """The ``[matrix]`` table (``backbones`` may also be given here; see :func:`parse_matrix`).

    name: the matrix's name (its folder under ``$LOCALFIN_RUNS_DIR`` by default).
    base: an experiment file whose tables every cell starts from (relative: to this file);
        this file's own experiment tables are merged over it.
    seeds: the seeds of every cell (three per setting).
    exposures: the exposures of every cell (unset: the base's, else both).
    synthetic_market: write the bundled synthetic market into the matrix folder and use it as
        every cell's store (the CPU demo's market).
    """

    name: str
    base: str = ""
    seeds: tuple[int, ...] = DEFAULT_SEEDS
    exposures: tuple[str, ...] | None = None
    synthetic_market: bool = False


def _backbones(raw: Any, file: Any) -> tuple[Backbone, ...]:
    if raw is None:
        raise ConfigError('backbones is missing; allowed: backbones = ["key", ...] or [[backbones]] tables')
    if not isinstance(raw, list):
        raise cf.key_error("backbones", "allowed: an array of registry keys or of tables", file=file)
    out = []
    for k, item in enumerate(raw):
        if isinstance(item, str):
            out.append(Backbone(name=item, key=item))
            continue
        if not isinstance(item, Mapping):
            raise cf.key_error(f"backbones[{k}]", f"{item!r}; allowed: a registry key or a table", file=file)
        body = dict(item)
        own = {n: body.pop(n) for n in ("key", "name", "model_path", "exposures") if n in body}
        own.setdefault("name", own.get("key"))
        own = {n: v for n, v in own.items() if v is not None}
        out.append(cf.load(Backbone, {**own, "model": body}, key=f"backbones[{k}]", file=file))
    return tuple(out)


def _windows(raw: Any, file: Any) -> tuple[WindowSet, ...]:
    if isinstance(raw, Mapping):
        return (cf.load(WindowSet, {"name": "main", **raw}, key="windows[0]", file=file),)
    if not isinstance(raw, list):
        raise cf.key_error("windows", "allowed: a [windows] table or [[windows]] tables", file=file)
    return tuple(cf.load(WindowSet, item, key=f"windows[{k}]", file=file) for k, item in enumerate(raw))


def parse_matrix(data: Mapping[str, Any], *, base_dir: Path, file: str | Path | None = None) -> MatrixConfig:
    """A :class:`MatrixConfig` from a parsed matrix TOML document (``base_dir``: its folder;
    ``file`` names it in errors)."""
    doc = dict(data)
    m = doc.pop("matrix", None)
    if not isinstance(m, Mapping):
        names = ", ".join(f.name for f in fields(_MatrixTable))
        raise ConfigError(f"[matrix] table is missing; allowed keys: {names}, backbones")
    m = dict(m)
    if "backbones" in m and "backbones" in doc:
        raise ConfigError("backbones given twice (matrix.backbones and [[backbones]]); allowed: one of them")
    raw_backbones = m.pop("backbones") if "backbones" in m else doc.pop("backbones", None)
    table = cf.load(_MatrixTable, m, key="matrix", file=file)
    name = _name(table.name, "matrix.name")
    backbones = _backbones(raw_backbones, file)
    windows_raw = doc.pop("windows", None)
    base_doc: dict[str, Any] = {}
    if table.base:
        base_path = Path(table.base).expanduser()
        if not base_path.is_absolute():
            base_path = (base_dir / base_path).resolve()
        base_doc = cf.read_toml(base_path, "matrix.base")
        store = base_doc.get("experiment", {}).get("store")
        if isinstance(store, str) and not Path(store).expanduser().is_absolute():
            # the base's relative store is relative to the base's folder, not this file's
            base_doc["experiment"]["store"] = str((base_path.parent / store).resolve())
        pdir = (base_doc.get("prompt") or {}).get("dir")
        if isinstance(pdir, str) and pdir and not Path(pdir).expanduser().is_absolute():
            base_doc["prompt"]["dir"] = str((base_path.parent / pdir).resolve())
        if windows_raw is None:
            windows_raw = base_doc.get("windows")
        base_doc.pop("windows", None)
    if windows_raw is None:
        raise ConfigError("windows is missing; allowed: a [windows] table or [[windows]] tables")
    merged = cf.merge(base_doc, doc)
    exposures = table.exposures
    if exposures is None:
        default = merged.get("experiment", {}).get("exposures", list(EXPOSURES))
        exposures = cf.load(
            _MatrixTable, {"name": name, "exposures": default}, key="matrix", file=file
        ).exposures
    return MatrixConfig(
        name=name,
        document=merged,
        backbones=backbones,
        windows=_windows(windows_raw, file),
        seeds=table.seeds,
        exposures=tuple(exposures or ()),
        synthetic_market=table.synthetic_market,
        source_dir=base_dir,
        source_file=str(file) if file is not None else "",
    )


def load_matrix(path: str | Path) -> MatrixConfig:
    """Read and validate a matrix TOML file (the experiments are validated by :meth:`cells`)."""
    p = Path(path)
    return parse_matrix(cf.read_toml(p, "matrix config"), base_dir=p.resolve().parent, file=p)
