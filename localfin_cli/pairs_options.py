"""The options of the `localfin pairs` commands that name pools, years and baselines, parsed and
checked before any work (errors name the option as the user typed it; years outside the data
give the store's range)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

__all__ = ["parse_pools", "parse_years", "check_years", "baseline_configs"]


def parse_pools(specs: list[str]) -> dict[str, list[str]]:
    """``--pool NAME=T1,T2,...`` options as name -> tickers (at least two each)."""
    pools: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, tickers = spec.partition("=")
        names = [t.strip() for t in tickers.split(",") if t.strip()]
        if not sep or not name.strip() or len(names) < 2:
            raise typer.BadParameter(f"--pool {spec!r}: allowed NAME=T1,T2[,...] (at least two tickers)")
        pools[name.strip()] = names
    return pools


def parse_years(text: str) -> list[int]:
    """``--years YEAR`` or ``FIRST-LAST`` as the list of years."""
    first, _, last = text.partition("-")
    try:
        lo, hi = int(first), int(last or first)
    except ValueError:
        raise typer.BadParameter(f"--years {text!r}: allowed YEAR or FIRST-LAST, e.g. 2005-2023") from None
    if not 1900 <= lo <= hi <= 2100:
        raise typer.BadParameter(f"--years {text!r}: allowed FIRST <= LAST within 1900..2100")
    return list(range(lo, hi + 1))


def check_years(store: Path, pools: dict[str, list[str]], years: list[int]) -> None:
    """Each pool's tickers in the store and prices inside ``--years`` (else its range, exit 2)."""
    from agent.data.coverage import check_window
    from agent.data.store import MarketStore

    shown = f"{years[0]}" + (f"-{years[-1]}" if years[-1] != years[0] else "")
    with MarketStore(store, create=False) as db:
        for name, tickers in pools.items():
            check_window(
                db,
                f"{years[0]}-01-01",
                f"{years[-1]}-12-31",
                name=f"--years {shown} (pool {name})",
                tickers=tickers,
                pool_name=f"--pool {name}",
            )


def baseline_configs(methods: str, options: list[str]) -> list[Any]:
    """The runner configs of ``--methods`` with the ``--option`` settings, read like an
    experiment's ``[baselines]`` table (errors name the option)."""
    from agent.pairs.baselines.config import parse_baselines
    from agent.pairs.baselines.plugins import baseline_names
    from agent.pairs.experiment.config import ModelConfig
    from localfin import configfile as cf
    from localfin.errors import ConfigError

    names = [m.strip() for m in methods.split(",") if m.strip()]
    known = [m for m in baseline_names() if m != "finmem"]
    if "finmem" in names:
        raise ConfigError(
            "--methods finmem: FinMem calls a model; run it beside the agent (localfin pairs run, "
            f'[baselines] methods = ["finmem"]); allowed here: {", ".join(known)}'
        )
    unknown = [m for m in names if m not in known]
    if unknown or not names:
        given = ", ".join(map(repr, unknown)) or "none"
        raise ConfigError(f"--methods has {given}; allowed: {', '.join(known)}")
    table: dict = {"methods": names}
    for spec in options:
        key, sep, text = spec.partition("=")
        method, dot, field = key.strip().partition(".")
        if not (sep and dot and field and method in names):
            raise ConfigError(
                f"--option {spec!r}; allowed: METHOD.KEY=VALUE, METHOD one of --methods ({', '.join(names)})"
            )
        try:
            value = cf.loads_toml(f"v = {text.strip()}", "--option")["v"]
        except ConfigError:
            value = text.strip()  # a bare word: a string
        table.setdefault(method, {})[field] = value
    try:
        return parse_baselines(table, ModelConfig()).rule_configs()
    except ConfigError as exc:
        raise ConfigError(f"--option: {exc}") from None
