"""The news budget every prompt of the pair-trading agents shares (``[prompt] news_token_budget``).

A prompt's news is a list of whole items, newest first; the budget keeps the longest prefix of
that list whose estimated tokens fit, so a prompt never shows a cut item, nor an older item in
place of a newer one. What the budget left out is counted (:class:`BudgetCut`), so that a run can
report every prompt it cut. The estimate needs no tokenizer (the prompt builders run without a
model): :func:`estimate_tokens`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["estimate_tokens", "BudgetCut", "fit_newest_first"]


def estimate_tokens(text: str) -> int:
    """Tokens a text costs, estimated from its length: one per 3 characters, rounded up.
    English BPE text runs about 4 characters a token in the Llama-3 and Qwen3 tokenizers, so
    the estimate errs on the long side and a budget holds (a budget is a bound on size, not an
    exact count)."""
    return -(-len(text) // 3)


@dataclass(frozen=True)
class BudgetCut:
    """What a news budget did to one prompt's items: ``shown`` items whose texts cost ``tokens``
    (estimated), ``omitted`` items left out, under ``budget`` tokens (0: no budget applied)."""

    shown: int
    omitted: int
    tokens: int
    budget: int

    @property
    def cut(self) -> bool:
        """True when the budget left at least one item out."""
        return self.omitted > 0


def fit_newest_first(texts: Sequence[str], budget: int, *, reserved: int = 0) -> BudgetCut:
    """How many leading items of ``texts`` (newest first) fit ``budget`` estimated tokens after
    ``reserved`` tokens already spent on other news of the same prompt; the first item that does
    not fit ends the list. ``budget`` 0: everything is shown (no budget)."""
    if not budget:
        return BudgetCut(len(texts), 0, sum(estimate_tokens(t) for t in texts), 0)
    left, used = budget - reserved, 0
    for k, t in enumerate(texts):
        cost = estimate_tokens(t)
        if cost > left:
            return BudgetCut(k, len(texts) - k, used, budget)
        left, used = left - cost, used + cost
    return BudgetCut(len(texts), 0, used, budget)
