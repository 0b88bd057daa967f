"""The documentation pages generated from the code, kept in the repository so that every link to
them works in a clone as on the built site: the command-line reference (from the typer app), the
configuration reference (from the config dataclasses) and the two protocol pages (from the
protocol ledger and the shipped reproduction configs).

``python -m localfin_cli.docs_pages`` writes them after a change to a command, a config key or
the ledger; ``--check`` lists those that differ from the code (exit 1), as the test suite and
``mkdocs build --strict`` do.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["PAGES", "render_pages", "stale_pages", "write_pages", "main"]

ROOT = Path(__file__).resolve().parents[1]


def _cli() -> str:
    from localfin_cli.reference import render_markdown

    return render_markdown()


def _config() -> str:
    from agent.configref import render_markdown

    return render_markdown()


def _protocol(paper: str) -> Callable[[], str]:
    def render() -> str:
        from agent.reproduce.ledger.render import render_protocol

        return render_protocol(paper)

    return render


#: page (relative to docs/) -> what renders it
PAGES: dict[str, Callable[[], str]] = {
    "reference/cli.md": _cli,
    "reference/config.md": _config,
    "protocol/moira.md": _protocol("moira"),
    "protocol/finacumen.md": _protocol("finacumen"),
}


def render_pages() -> dict[str, str]:
    """Every generated page's text, by its path under docs/."""
    return {page: render() for page, render in PAGES.items()}


def stale_pages(docs: Path = ROOT / "docs") -> list[str]:
    """The pages whose file under ``docs`` is missing or differs from the code."""
    stale = []
    for page, text in render_pages().items():
        path = docs / page
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            stale.append(page)
    return stale


def write_pages(docs: Path = ROOT / "docs") -> list[Path]:
    """Write every generated page under ``docs``; returns the files written."""
    written = []
    for page, text in render_pages().items():
        path = docs / page
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m localfin_cli.docs_pages", description=__doc__)
    ap.add_argument("--check", action="store_true", help="list the pages that differ from the code")
    args = ap.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for page in stale:
            sys.stdout.write(
                f"docs/{page} differs from the code; write it: python -m localfin_cli.docs_pages\n"
            )
        return 1 if stale else 0
    for path in write_pages():
        sys.stdout.write(f"wrote {path.relative_to(ROOT)}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
