"""The `localfin` command: a thin typer app over the package functions.

Each command group lives in its own module (models, data, pairs, bank, bench); heavy imports
happen inside the command functions so that `localfin --help` stays fast.
"""

from __future__ import annotations

import logging

import typer

from localfin_cli import bank_cmd, bench_cmd, data_cmd, models_cmd, pairs_cmd, serve_cmd

__all__ = ["app"]

app = typer.Typer(
    name="localfin",
    help="Offline financial LLM agents on self-hosted open-weight models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.callback()
def _main(verbose: bool = typer.Option(False, "--verbose", "-v", help="Debug logging.")) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


app.add_typer(models_cmd.app, name="models")
app.add_typer(data_cmd.app, name="data")
app.add_typer(pairs_cmd.app, name="pairs")
app.add_typer(bank_cmd.app, name="bank")
app.add_typer(bench_cmd.app, name="bench")
serve_cmd.register(app)

if __name__ == "__main__":  # pragma: no cover
    app()
