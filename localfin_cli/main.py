"""The `localfin` command: a thin typer app over the package functions.

Each command group lives in its own module (models, data, pairs, bank, bench); heavy imports
happen inside the command functions so that `localfin --help` stays fast.

One error path for every command (:func:`main`): a command raises, and the user sees one line
``error: ...`` on stderr and the exit code of :data:`localfin.errors.EXIT_CODES`: 2 for bad
input or configuration (usage errors, our :class:`~localfin.errors.ConfigError` / input errors,
any ``ValueError``), 1 for a failure at run time, 3-6 for the faults a long run meets (folder in
use, server gone, write failed, damaged file), 130 / 143 for SIGINT / SIGTERM (docs/faults.md).
The traceback goes to the log at DEBUG level and is shown only with ``--verbose``.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from pathlib import Path

import click
import typer

from localfin.errors import LocalfinError, exit_code_for, signal_exit_code
from localfin_cli import (
    audit_cmd,
    bank_cmd,
    bench_cmd,
    data_cmd,
    export_cmd,
    gpu_cmd,
    models_cmd,
    pairs_cmd,
    plugins_cmd,
    qa_cmd,
    qa_datasets_cmd,
    report_cmd,
    reproduce_cmd,
    serve_cmd,
)
from localfin_cli.help_format import MARKUP, tidy
from localfin_cli.suggest import with_suggestion

__all__ = ["app", "command", "main"]

log = logging.getLogger(__name__)

app = typer.Typer(
    name="localfin",
    help="Offline financial LLM agents on self-hosted open-weight models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=MARKUP,
)


def _version(value: bool) -> None:
    if value:
        from localfin import __version__

        sys.stdout.write(f"localfin {__version__}\n")
        raise typer.Exit()


@app.callback()
def _main(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show engine and library logs."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    models_file: list[Path] = typer.Option(
        None,
        "--models-file",
        help="A models file ([[models]] tables) adding registry keys for this command; repeatable. "
        "Sets LOCALFIN_MODELS_FILE (default: $LOCALFIN_HOME/models.toml when it exists).",
    ),
) -> None:
    if models_file:
        from localfin.errors import ConfigError

        missing = [str(p) for p in models_file if not p.is_file()]
        if missing:
            raise ConfigError(f"--models-file {', '.join(missing)}: no such file; allowed: a TOML file")
        # the variable, not an argument: engine workers and servers started from here read it too
        os.environ["LOCALFIN_MODELS_FILE"] = os.pathsep.join(str(p.resolve()) for p in models_file)
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


app.add_typer(models_cmd.app, name="models")
app.add_typer(data_cmd.app, name="data")
app.add_typer(pairs_cmd.app, name="pairs")
app.add_typer(bank_cmd.app, name="bank")
app.add_typer(bench_cmd.app, name="bench")
qa_datasets_cmd.register(qa_cmd.app)
app.add_typer(qa_cmd.app, name="qa")
app.add_typer(plugins_cmd.app, name="plugins")
serve_cmd.register(app)
report_cmd.register(app)
export_cmd.register(app)
audit_cmd.register(app)
reproduce_cmd.register(app)
gpu_cmd.register(app)


def command() -> typer.core.TyperGroup:
    """The command tree of :data:`app` as ``localfin`` runs it and the reference page shows it
    (:mod:`localfin_cli.help_format`)."""
    return tidy(typer.main.get_command(app))


# typer >= 0.2x carries its own copy of click: its exceptions are not click's, so both families
# are caught (with an older typer the two tuples name the same classes).
_EXITS = (click.exceptions.Exit, typer.Exit)
_ABORTS = (click.exceptions.Abort, typer.Abort)
_USAGE = (click.ClickException, *[c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException"])


#: set when a command was stopped at once by a second signal: :func:`entry` then leaves without
#: waiting for threads still blocked in a request (an HTTP reply that may take minutes)
_stopped_at_once = False


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "(no message)"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: the process arguments); returns the exit code."""
    args = sys.argv[1:] if argv is None else list(argv)
    if threading.current_thread() is threading.main_thread():
        # a file-size limit (ulimit -f) reached is then a write error naming the file (exit 5),
        # not a kill by SIGXFSZ with the run's tables half-written
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    try:
        rv = command().main(args=args, prog_name="localfin", standalone_mode=False)
    except _EXITS as exc:
        return int(exc.exit_code)
    except _ABORTS:
        sys.stderr.write("error: aborted\n")
        return 1
    except _USAGE as exc:  # usage errors: unknown option, missing argument, bad type
        if type(exc).__name__ != "NoArgsIsHelpError":  # a group without its command: help shown
            sys.stderr.write(f"error: {_one_line(exc.format_message())}\n")
        return 2
    except (LocalfinError, ValueError, OSError) as exc:
        global _stopped_at_once
        _stopped_at_once = bool(getattr(exc, "at_once", False))
        log.debug("command failed", exc_info=True)  # the traceback, shown with --verbose
        sys.stderr.write(f"error: {with_suggestion(_one_line(str(exc)))}\n")
        return exit_code_for(exc)
    except KeyboardInterrupt as exc:  # a Ctrl-C outside a command's own handling
        signum = int(getattr(exc, "signum", signal.SIGINT))
        sys.stderr.write(
            f"error: stopped at once by {signal.Signals(signum).name}; the call in flight is lost, every "
            "journaled call is kept: rerun the same command (with --resume where it has it) to continue\n"
        )
        return signal_exit_code(signum)
    return rv if isinstance(rv, int) else 0


def entry() -> None:  # pragma: no cover - the console script
    code = main()
    if _stopped_at_once:
        import os

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)  # journaled calls are committed; threads blocked in a request are left behind
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
