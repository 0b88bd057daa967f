"""`localfin bench ...`: each subcommand forwards its arguments to a `bench.<name>.main(argv)`."""

from __future__ import annotations

import importlib

import typer

__all__ = ["app"]

app = typer.Typer(help="Benchmarks; each prints JSON lines.", no_args_is_help=True)

_CTX = {"allow_extra_args": True, "ignore_unknown_options": True}


def _forward(module: str, ctx: typer.Context) -> None:
    main = importlib.import_module(f"bench.{module}").main
    raise typer.Exit(code=int(main(list(ctx.args)) or 0))


@app.command("kernels", context_settings=_CTX, add_help_option=False)
def kernels(ctx: typer.Context) -> None:
    """Numba kernels vs statsmodels / pandas (pass --help for its options)."""
    _forward("kernels", ctx)


@app.command("retrieval", context_settings=_CTX, add_help_option=False)
def retrieval(ctx: typer.Context) -> None:
    """Exact threshold retrieval (and hnswlib alone) vs numpy brute force (pass --help for its options)."""
    _forward("retrieval", ctx)


@app.command("serving", context_settings=_CTX, add_help_option=False)
def serving(ctx: typer.Context) -> None:
    """Chat backend throughput, latency and tokens (pass --help for its options)."""
    _forward("serving", ctx)


@app.command("moira-lockstep", context_settings=_CTX, add_help_option=False)
def moira_lockstep(ctx: typer.Context) -> None:
    """Moira demo experiment in lockstep vs one run at a time, same engine (pass --help)."""
    _forward("moira_lockstep", ctx)
