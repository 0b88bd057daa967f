"""What an experiment checks of its data before any folder, engine or model call: the store
exists, holds the pool's tickers, and has prices inside both windows (a window outside the
data is refused with the store's range; one reaching past it is kept with a warning:
:mod:`agent.data.coverage`)."""

from __future__ import annotations

from agent.data.coverage import check_window
from localfin.errors import ConfigError

__all__ = ["check_data"]


def check_data(cfg: object) -> None:
    """Check ``cfg`` (an :class:`~agent.pairs.experiment.config.ExperimentConfig`) against its
    store; errors name the key (``experiment.store``, ``experiment.pool``, ``windows.*``)."""
    from agent.data.store import MarketStore

    store_path = cfg.store  # type: ignore[attr-defined]
    if not store_path.is_file():
        raise ConfigError(
            f"experiment.store={store_path} does not exist; import data first (localfin data import)"
        )
    pool = tuple(cfg.pool)  # type: ignore[attr-defined]
    w = cfg.windows  # type: ignore[attr-defined]
    with MarketStore(store_path, create=False) as store:
        for name, start, end in (("train", w.train_start, w.train_end), ("test", w.test_start, w.test_end)):
            check_window(
                store,
                start,
                end,
                name=f"windows.{name}_start .. windows.{name}_end = {start} .. {end}",
                tickers=pool or None,
                pool_name="experiment.pool",
            )
