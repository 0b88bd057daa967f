"""MkDocs hook: a table a command prints (rich's box drawing, as a terminal shows it) keeps its
lines whole in a code block.

Code blocks wrap their long lines at laptop widths (``stylesheets/layout.css``); a wrapped line
of a box-drawn table falls apart into fragments of borders. Such a block is marked
``terminal-table`` and is set in smaller type without wrapping, so a table as wide as a
100-column terminal fits the page at 1280 pixels.
"""

from __future__ import annotations

import re

__all__ = ["mark_terminal_tables"]

_BLOCK = re.compile(r'<div class="highlight">(<pre><span></span><code>)(.*?)(</code></pre>)', re.S)
#: a line that starts with a box-drawing corner or border (after the theme's line span)
_BOX_LINE = re.compile(r"(?m)(?:^|>)[┏┃┡│└╭╰┌├]")


def mark_terminal_tables(html: str) -> str:
    """``html`` with every code block holding a box-drawn table marked ``terminal-table``."""

    def block(m: re.Match[str]) -> str:
        if len(_BOX_LINE.findall(m.group(2))) < 3:
            return m.group(0)
        return f'<div class="highlight terminal-table">{m.group(1)}{m.group(2)}{m.group(3)}'

    return _BLOCK.sub(block, html)


def on_page_content(html: str, page, config, files) -> str:
    return mark_terminal_tables(html)
