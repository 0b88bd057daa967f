"""What a benchmark's question shows as its context, where the paper's and the authors' readings
of a release differ (``qa.finmme_context``).

FinMME: our loader writes the context as ``Caption: <verified caption>`` and, on the next line,
``Related: <related sentences>`` (:mod:`agent.qa.loaders.finmme`); the authors' adapter
(``ft/dataset/adapters.py``) gives the verified caption alone, as it is. ``caption`` turns each
FinMME question's context into the caption alone (read back from that form; nothing else of the
item is read); ``caption_related`` keeps both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from agent.qa.core.items import QAItem
from localfin.errors import ConfigError

__all__ = ["FINMME_CONTEXTS", "caption_of", "with_context_form"]

#: ``caption_related``: caption and related sentences (ours); ``caption``: the caption alone
FINMME_CONTEXTS = ("caption_related", "caption")
_CAPTION, _RELATED = "Caption: ", "\nRelated: "


def caption_of(context: str) -> str:
    """The verified caption of a FinMME context in our loader's form ("" when it has none)."""
    if not context.startswith(_CAPTION):
        return ""
    body = context[len(_CAPTION) :]
    cut = body.rfind(_RELATED)
    return body[:cut] if cut >= 0 else body


def with_context_form(items: Sequence[QAItem], finmme: str) -> list[QAItem]:
    """``items`` with each FinMME question's context in the form ``finmme`` (module docstring)."""
    if finmme not in FINMME_CONTEXTS:
        raise ConfigError(f"qa.finmme_context={finmme!r}; allowed: {', '.join(FINMME_CONTEXTS)}")
    if finmme == "caption_related":
        return list(items)
    return [
        replace(it, question=replace(it.question, context=caption_of(it.question.context)))
        if it.question.dataset == "finmme"
        else it
        for it in items
    ]
