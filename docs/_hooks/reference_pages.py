"""MkDocs hook: writes the generated reference pages into the site at build time.

``reference/cli.md`` comes from the typer app (:mod:`localfin_cli.reference`),
``reference/config.md`` from the config dataclasses (:mod:`agent.configref`) and
``protocol/moira.md`` and ``protocol/finacumen.md`` from the protocol ledger and the shipped
reproduction configs (:mod:`agent.reproduce.ledger.render`); none is kept in the repository, so
none can go stale. A configuration key without a description is listed as
a warning, which fails ``mkdocs build --strict``.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

log = logging.getLogger("mkdocs.plugins.localfin")


def on_files(files: Files, config) -> Files:
    from agent.configref import render_markdown as config_reference
    from agent.configref import undocumented
    from agent.reproduce.ledger.render import render_protocol
    from localfin_cli.reference import render_markdown as cli_reference

    for key in undocumented():
        log.warning("configuration key without a description: %s", key)
    files.append(File.generated(config, "reference/cli.md", content=cli_reference()))
    files.append(File.generated(config, "reference/config.md", content=config_reference()))
    for paper in ("moira", "finacumen"):
        files.append(File.generated(config, f"protocol/{paper}.md", content=render_protocol(paper)))
    return files
