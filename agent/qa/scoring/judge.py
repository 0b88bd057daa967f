"""Judge-model scoring (FinTMMBench's protocol, on a local model).

FinTMMBench grades a free-text answer by asking a model whether it states the same fact as
the reference (the paper used GPT-4o-mini; we use whatever local model the caller names).
Scoring is split in two so an evaluation can batch every judge call of a run into one engine
call: :func:`judge_requests` builds the requests (``call_type='judge'``, temperature 0, a
schema-constrained verdict: ``verdict`` in {correct, incorrect}, ``reason`` at most 160
characters), the caller runs them through its (journaled) backend (for a finished run folder
:func:`agent.qa.scoring.judge_pass.judge_run` does it), and :func:`judge_scores`
turns the results into :class:`agent.qa.core.item_score.ItemScore` values. A reply that is cut or
does not satisfy the schema counts as incorrect and says so in ``detail`` (a recorded
fallback, never a silent guess). The judge prompt holds the reference answer: judge calls
are scoring, never part of a solver's run.

Two prompts, the same verdict schema: ``qa_judge`` (:data:`JUDGE_PROMPT`, localfin's: the same
fact, in the same unit and scale, wording free) and ``qa_judge_strict``
(:data:`STRICT_JUDGE_PROMPT`, the rules of the FinAcumen authors' judge in our words: any
numeric difference, a unit the reference has and the answer lacks, another entity, a number for
a text or a text for a number, a non-answer or a contradicted direction is incorrect).

A third, :data:`AUTHORS_JUDGE` (``qa.judge_protocol = "authors"``), is the authors' own: their
prompt read from their checkout (``authors``, :class:`agent.qa.authors.checkout.AuthorsCode`)
as one user message with the question, the gold answer and the prediction, no schema, a budget
of ``max_tokens`` (theirs: 5), the verdict correct when the reply starts with ``YES`` (any case).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.prompting import load_prompt
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import QAItem
from agent.qa.core.schemas import char_bound
from localfin.errors import ConfigError
from serving.types import ChatRequest, ChatResult, Message

__all__ = [
    "JUDGE_PROMPT",
    "STRICT_JUDGE_PROMPT",
    "JUDGE_PROMPTS",
    "AUTHORS_JUDGE",
    "CANDIDATE_CHARS",
    "judge_requests",
    "judge_scores",
]

JUDGE_PROMPT = "qa_judge"
STRICT_JUDGE_PROMPT = "qa_judge_strict"
#: The judge prompts a scorer may name.
JUDGE_PROMPTS = (JUDGE_PROMPT, STRICT_JUDGE_PROMPT)
#: The authors' judge (its prompt read from their checkout; the module docstring)
AUTHORS_JUDGE = "authors"
#: Most characters of a candidate answer the judge is shown by default (the rest is dropped).
CANDIDATE_CHARS = 2000


def judge_requests(
    items: Sequence[QAItem],
    predictions: Sequence[str],
    model: str,
    *,
    max_tokens: int | None = None,
    prompt_name: str = JUDGE_PROMPT,
    candidate_chars: int = CANDIDATE_CHARS,
    authors: Any = None,
) -> list[ChatRequest]:
    """One judge request per (item, prediction), in order.

    Args:
        items: the items (their question text and gold answer go into the judge prompt).
        predictions: the solver's final answers, one per item.
        model: registry key of the judge model.
        max_tokens: reply budget; None: the verdict schema's worst case (a token is at least
            one character), so a reply is never cut before its JSON closes.
        prompt_name: one of :data:`JUDGE_PROMPTS`, or :data:`AUTHORS_JUDGE` (with ``authors``).
        candidate_chars: most characters of a prediction shown to the judge.
        authors: the authors' checkout (:data:`AUTHORS_JUDGE`).
    """
    if len(items) != len(predictions):
        raise ConfigError(
            f"items ({len(items)}) and predictions ({len(predictions)}) must have the same length"
        )
    if prompt_name == AUTHORS_JUDGE:
        return _authors_requests(items, predictions, model, authors, max_tokens or 5)
    if prompt_name not in JUDGE_PROMPTS:
        raise ConfigError(
            f"prompt_name={prompt_name!r}; allowed: {', '.join((*JUDGE_PROMPTS, AUTHORS_JUDGE))}"
        )
    if not 10 <= candidate_chars <= 100_000:
        raise ConfigError(f"candidate_chars={candidate_chars}; allowed: 10..100000")
    prompt = load_prompt(prompt_name)
    if max_tokens is None:
        max_tokens = char_bound(prompt.schema or {}) + 16
    if not 16 <= max_tokens <= 4096:
        raise ConfigError(f"max_tokens={max_tokens}; allowed: 16..4096")
    out = []
    for item, pred in zip(items, predictions):
        gold = item.gold.answer
        reference = "; ".join(map(str, gold)) if isinstance(gold, (list, tuple)) else str(gold)
        candidate = str(pred).strip()[:candidate_chars] or "(empty)"
        system, user = prompt.render(question=item.question.text, reference=reference, candidate=candidate)
        out.append(
            ChatRequest(
                model=model,
                messages=(Message("system", system), Message("user", user)),
                max_tokens=max_tokens,
                temperature=0.0,
                json_schema=prompt.schema,
                call_type="judge",
            )
        )
    return out


def _authors_requests(
    items: Sequence[QAItem], predictions: Sequence[str], model: str, authors: Any, max_tokens: int
) -> list[ChatRequest]:
    from agent.qa.authors.bank_texts import judge_text
    from agent.qa.data.gold_inputs import gold_text

    if authors is None:
        raise ConfigError(
            "the authors' judge reads its prompt from their checkout; give it (qa.authors_code)"
        )
    return [
        ChatRequest(
            model=model,
            messages=(Message("user", judge_text(authors, it.question.text, gold_text(it.gold), str(p))),),
            max_tokens=max_tokens,
            temperature=0.0,
            call_type="judge",
        )
        for it, p in zip(items, predictions)
    ]


def judge_scores(results: Sequence[ChatResult], prompt_name: str = JUDGE_PROMPT) -> list[ItemScore]:
    """Scores from judge replies, in order; an unusable reply counts as incorrect (the authors'
    judge: a reply starting with ``YES`` is correct, any other is not)."""
    if prompt_name == AUTHORS_JUDGE:
        from agent.qa.authors.bank_texts import judged_yes

        return [
            ItemScore(False, 0.0, f"judge call failed ({r.parse_error}); counted incorrect")
            if r.finish_reason == "error"
            else ItemScore(judged_yes(r.text), float(judged_yes(r.text)), f"judge: {r.text.strip()[:40]!r}")
            for r in results
        ]
    scores = []
    for r in results:
        parsed = r.parsed if isinstance(r.parsed, dict) else None
        if r.is_fallback or parsed is None or parsed.get("verdict") not in ("correct", "incorrect"):
            why = r.parse_error or f"finish_reason={r.finish_reason}"
            scores.append(ItemScore(False, 0.0, f"judge reply unusable ({why}); counted incorrect"))
            continue
        ok = parsed["verdict"] == "correct"
        scores.append(
            ItemScore(ok, float(ok), f"judge: {parsed['verdict']}: {str(parsed.get('reason', ''))[:160]}")
        )
    return scores
