"""Argument parsing shared by the benchmarks: usage errors become one-line errors.

``argparse`` prints its usage and exits on a bad argument; under ``localfin bench ...`` that
would bypass the CLI's one error path. :class:`BenchParser` raises
:class:`~localfin.errors.ConfigError` instead, and :func:`run_main` gives ``python -m bench.x``
the same ``error: ...`` line and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any, NoReturn

from localfin.errors import ConfigError

__all__ = ["BenchParser", "run_main"]


class BenchParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors raise :class:`ConfigError` naming the problem;
    its description (the command's help) is printed with its lines and examples as written."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{self.prog}: {message} (see --help)")


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """Run a benchmark's ``main`` as a script: a ConfigError is one line on stderr, exit 2."""
    try:
        code = int(main() or 0)
    except ConfigError as exc:
        sys.stderr.write(f"error: {exc}\n")
        code = 2
    raise SystemExit(code)
