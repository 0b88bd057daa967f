"""MkDocs hook: a name in a table cell (code without a space: a key, an option, a path) is never
broken inside a word, and a table keeps to the page's width.

The browser breaks code anywhere its style allows: inside a word (the theme's ``break-word``)
or after a hyphen (``--models-`` / ``file``). Here every such name becomes a run that does not
wrap (``stylesheets/layout.css``: ``code .nb``); a name longer than :data:`LONG` characters is
cut into runs after its separators (``/ . _ , = : -``), so it can still wrap there. A long word
of a cell's text (a path in a help text) gets the same break opportunities. Copying gives the
text as written.
"""

from __future__ import annotations

import re

#: names up to this many characters are one run; longer ones may wrap after a separator
LONG = 24

_CELL = re.compile(r"(<t[dh][^>]*>)(.*?)(</t[dh]>)", re.S)
_CODE = re.compile(r"<code>(.*?)</code>", re.S)
_TAG = re.compile(r"<[^>]+>")
_PARTS = re.compile(r"(<code>.*?</code>|<[^>]+>)", re.S)
_LONG_WORD = re.compile(rf"[^\s]{{{LONG + 1},}}")
_AFTER = re.compile(r"(?<=[/._,=:-])(?=[^/._,=:-])")


def _runs(name: str) -> str:
    """``name`` (the HTML inside a ``<code>``) as non-wrapping runs with a break opportunity
    between them; a name with markup inside (a link, a title) is one run; code with a space is
    left as it is."""
    text = _TAG.sub("", name)
    if not text or any(ch.isspace() for ch in text):
        return name
    plain = re.sub(r"&[a-z]+;|&#\d+;", "x", text)  # an entity counts as one character
    pieces = [name] if len(plain) <= LONG or text != name else _AFTER.split(name)
    return "<wbr>".join(f'<span class="nb">{p}</span>' for p in pieces if p)


def keep_names(html: str) -> str:
    """``html`` with every table cell's code-without-a-space made into runs (see the module)."""

    def part(p: str) -> str:
        if p.startswith("<code>"):
            return _CODE.sub(lambda c: f"<code>{_runs(c.group(1))}</code>", p)
        if p.startswith("<"):
            return p
        return _LONG_WORD.sub(lambda w: "<wbr>".join(_AFTER.split(w.group(0))), p)

    def cell(m: re.Match[str]) -> str:
        return m.group(1) + "".join(part(p) for p in _PARTS.split(m.group(2))) + m.group(3)

    return _CELL.sub(cell, html)


def on_page_content(html: str, page, config, files) -> str:
    return keep_names(html)
