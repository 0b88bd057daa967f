"""MkDocs hook: a name in a table cell (a key, an option, a path, a date, a model) is never broken
over two lines inside a word, and a table keeps to the page's width.

The browser breaks a cell's text where its style allows: inside a word (the theme's
``break-word`` for code) or after any hyphen (``--models-`` / ``file``, ``2024-12-`` / ``02``).
Here every word of a cell that is not a plain one (it holds a ``-``, ``/``, ``_``, ``.``, ``:`` or
``=``; ``equal-magnitude`` is plain and may break at its hyphen, as prose does, but not
``YYYY-MM-DD`` or ``EG-DDQN``, whose parts are not lower-case words) becomes a run that
does not wrap (``stylesheets/layout.css``: ``.nb``); a long one is cut into runs after its
separators, so it can still wrap there: a name given alone as code (a key, an option; not a
path) beyond :data:`LONG_NAME` characters, any other word beyond :data:`LONG`. Copying gives the text as
written.

The same holds for the navigation and the table of contents (:func:`keep_nav_names`): a
command such as ``localfin bench moira-news-share`` keeps its name whole, and a long heading such
as ``[baselines.finmem.memory.reflection]`` wraps after a separator instead of being cut off
with an ellipsis.
"""

from __future__ import annotations

import re

#: words up to this many characters are one run; longer ones may wrap after a separator
LONG = 14
#: the same for a name given alone as code (a key in the configuration reference stays whole)
LONG_NAME = 28

_CELL = re.compile(r"(<t[dh][^>]*>)(.*?)(</t[dh]>)", re.S)
_TAG = re.compile(r"(<[^>]+>)")
_LONE_CODE = re.compile(r"(<code>)([^<\s]+)(</code>)")
_WORD = re.compile(r"\S+")
_NAME = re.compile(r"[^A-Za-z]")
_PLAIN = re.compile(
    r"(?:\(|&quot;|&#x27;|[“‘])*(?:[A-Za-z]+|[A-Za-z][a-z]*(?:-[A-Za-z][a-z]*)+)(?:\)|&quot;|&#x27;|[”’,.;:!?])*"
)
_ENTITY = re.compile(r"&(?:[a-z]+|#x?[0-9a-f]+);", re.I)
_AFTER = re.compile(r"(?<=[/._,=:)|+-])(?=[^/._,=:)|+-])")


def _runs(word: str, long: int = LONG, *, plain: bool = True) -> str:
    """One word of a cell (HTML-escaped) as non-wrapping runs with break opportunities between
    them; a plain word as it is (with ``plain`` false, only a word without separators). A word
    ending in an opening bracket may wrap after it: in a type such as ``Callable[[PairView],
    str]``, the name after it is a text of its own, which the browser would otherwise break
    inside."""
    if not _NAME.search(word) or (plain and _PLAIN.fullmatch(word)):
        return word
    pieces = [word] if len(_ENTITY.sub("x", word)) <= long else _AFTER.split(word)
    runs = "<wbr>".join(f'<span class="nb">{p}</span>' for p in pieces if p)
    return runs + "<wbr>" if word.endswith(("[", "(")) else runs


def keep_names(html: str) -> str:
    """``html`` with every table cell's names made into runs (see the module)."""

    def words(text: str) -> str:
        return _WORD.sub(lambda w: _runs(w.group(0)), text)

    def cell(m: re.Match[str]) -> str:
        out = []
        for i, chunk in enumerate(_LONE_CODE.split(m.group(2))):
            if i % 4 == 2:  # the name inside a <code> of its own (a path wraps after its /)
                out.append(_runs(chunk, LONG if "/" in chunk else LONG_NAME))
            elif i % 4 in (1, 3):  # <code>, </code>
                out.append(chunk)
            else:
                out.append("".join(p if p.startswith("<") else words(p) for p in _TAG.split(chunk)))
        return m.group(1) + "".join(out) + m.group(3)

    return _CELL.sub(cell, html)


_NAV_ENTRY = re.compile(r'(<span class="md-ellipsis">)([^<]*)(</span>)')


def keep_nav_names(html: str) -> str:
    """``html`` with every word holding a separator in an entry of the navigation and the table
    of contents (there, such a word is a name) made into runs as in a table cell: whole up to
    :data:`LONG_NAME` characters (``moira-news-share`` is not broken at a hyphen), a longer one
    wrapping after its separators instead of being cut off with an ellipsis, as the theme
    does."""

    def entry(m: re.Match[str]) -> str:
        words = _WORD.sub(lambda w: _runs(w.group(0), LONG_NAME, plain=False), m.group(2))
        return m.group(1) + words + m.group(3)

    return _NAV_ENTRY.sub(entry, html)


def on_page_content(html: str, page, config, files) -> str:
    return keep_names(html)


def on_post_page(output: str, page, config) -> str:
    return keep_nav_names(output)
