"""Model-written text on the report page: shown as written, and flagged when it is not prose.

A principle, a reason or an answer comes from the model; a small model sometimes writes markup
or symbol soup (``{\\bf}\\b{SHOOTING} \\\\ {},… F]{MATHEMATICS}``) that still passed its reply
schema. The page never hides it and never renders it as markup: it is escaped and shown verbatim
in a monospace box (a control character as its Unicode picture, U+0001 as ␁), with a flag saying
it is not readable prose. :func:`is_prose` decides, on
the text alone:

* markup is not prose: a backslash command (``\\bf``), a brace or an HTML-like tag;
* at most a tenth of the non-space characters may be symbols other than ordinary punctuation
  (``. , ; : ! ? ' " ( ) % - + / $ & = < > _``);
* at least one word, and at least half of the tokens words (letters, with inner hyphens,
  apostrophes, digits or underscores: ``z-score``, ``SHORT_LONG``, ``2%``).

An empty text is not prose (there is nothing to read). Thresholds are about readability only:
nothing here moves a figure.
"""

from __future__ import annotations

import re

from agent.report.html import esc

__all__ = ["is_prose", "model_text"]

_MARKUP = re.compile(r"\\[A-Za-z]+|[{}]|</?[A-Za-z][^>]*>")
_PLAIN = re.compile(r"[A-Za-z0-9\s.,;:!?'\"()%\-+/$&=<>_*#@]")
_WORD = re.compile(r"[(\"'“]*[A-Za-z0-9][A-Za-z0-9'’_\-.%/]*[)\"'”,.;:!?]*")


def is_prose(text: str) -> bool:
    """Whether ``text`` reads as prose (rules in the module doc)."""
    t = text.strip()
    if not t or _MARKUP.search(t):
        return False
    chars = [c for c in t if not c.isspace()]
    odd = sum(1 for c in chars if not _PLAIN.match(c))
    if odd > 0.1 * len(chars):
        return False
    tokens = t.split()
    words = sum(1 for w in tokens if _WORD.fullmatch(w) and any(c.isalpha() for c in w))
    return words >= 1 and words >= 0.5 * len(tokens)


def _visible(text: str) -> str:
    """``text`` with each control character shown as its Unicode picture (U+0001 as ␁), so that
    nothing the model wrote is invisible or drawn as an empty box."""
    return "".join(chr(0x2400 + ord(c)) if ord(c) < 0x20 and c not in "\n\t" else c for c in text)


def model_text(text: str) -> str:
    """``text`` as page HTML: escaped prose as is; anything else escaped in a monospace box with a
    flag (module doc), its control characters shown as their pictures."""
    if is_prose(text):
        return esc(text)
    return (
        f'<span class="garbled">{esc(_visible(text))}</span> <span class="flag">(not readable prose: '
        "the model's output, shown as written)</span>"
    )
