"""MkDocs hook: the generated pages are current, and every configuration key has a description.

``reference/cli.md`` (from the typer app), ``reference/config.md`` (from the config dataclasses)
and ``protocol/moira.md`` and ``protocol/finacumen.md`` (from the protocol ledger and the shipped
reproduction configs) live in the repository, so that every link to them works in a clone as on
the site; :mod:`localfin_cli.docs_pages` writes them. A page that differs from the code, or a
configuration key without a description, is a warning, which fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("mkdocs.plugins.localfin")


def on_files(files: Files, config) -> Files:
    from agent.configref import undocumented
    from localfin_cli.docs_pages import stale_pages

    for key in undocumented():
        log.warning("configuration key without a description: %s", key)
    for page in stale_pages(Path(config["docs_dir"])):
        log.warning("docs/%s differs from the code; write it: python -m localfin_cli.docs_pages", page)
    return files
