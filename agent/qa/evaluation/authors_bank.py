"""The authors' grading and summary of one training item's trajectories
(``qa.bank_grading = "authors"``, ``qa.summary_prompt = "authors"``; ``fm/cross_verify.py``,
``fm/collect.py``), as a sub-program of the bank build (:mod:`agent.qa.evaluation.bank_build`).

1. A trajectory without an answer of its own final action (``terminate``; ours: ``final_answer``)
   is dropped, as their sampler keeps only trajectories whose ``terminate`` gave an answer. No
   trajectory left: no entry.
2. Each kept answer is correct when it is within 1 % of the gold answer (their check,
   :func:`agent.qa.authors.readings.close_enough`; the same rule for every benchmark, FinTMMBench
   included); a correct one scores 1.0.
3. When some are wrong, one call (call type ``bank_grade``, the solver's model at
   ``grading_temperature``, ``grading_max_tokens``) asks their grading prompt for a score from 0
   to 0.99 and a reason per wrong attempt; a reply without exactly one well-formed score per
   wrong attempt gives no entry.
4. The summary: with ``summary_prompt = "authors"`` their prompt over every kept attempt with its
   score and reason (call type ``bank_summarize``, ``summary_temperature``,
   ``summary_max_tokens``), read by their rules
   (:func:`agent.qa.authors.bank_texts.read_summary`); with ``ours`` our summary call, told which
   attempts were correct.

What the grader and summarizer read of a trajectory is its transcript as their bank writes it
(:func:`agent.qa.authors.bank_texts.trajectory_text`, kept by their loop), or, under our loop,
every step of it (:func:`agent.qa.evaluation.bank_items.describe_whole`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from agent.qa.authors import bank_texts as bt
from agent.qa.authors.readings import close_enough
from agent.qa.core.items import QAItem
from agent.qa.core.trajectory import Trajectory
from agent.qa.data.gold_inputs import gold_text
from bank.schema import NewEntry
from serving.lockstep import Program
from serving.types import ChatRequest, Message

__all__ = ["authors_outcome"]


def _text(builder: Any, t: Trajectory) -> str:
    if t.transcript:
        return t.transcript
    from agent.qa.evaluation.bank_items import describe_whole

    return describe_whole(t)


def authors_outcome(builder: Any, item: QAItem, trajs: Sequence[Trajectory]) -> Program[Any]:
    """The item's outcome (an :class:`agent.qa.evaluation.bank_build.ItemOutcome`) under the
    authors' grading (module docstring)."""
    from agent.qa.evaluation.bank_items import ItemOutcome

    c, code, q = builder.config, builder.authors, item.question
    gold = gold_text(item.gold)
    kept = [i for i, t in enumerate(trajs) if t.terminated and t.answer]
    correct = tuple(i in kept and close_enough(t.answer, gold) for i, t in enumerate(trajs))
    done = {"source_set": item.source_set, "scored_by": "authors: within 1 % of the gold"}
    if not kept:
        return ItemOutcome(q.item_id, tuple(trajs), correct, None, "no_terminated_trajectory", "", **done)
    problem = bt.problem_text(code, q.text, q.context, q.options)
    scores: dict[int, tuple[float, str]] = {i: (1.0, "correct") for i in kept if correct[i]}
    wrong = [i for i in kept if not correct[i]]
    reply = ""
    if wrong:
        attempts = bt.attempts_text(code, [(_text(builder, trajs[i]), None, "") for i in wrong])
        req = ChatRequest(
            model=builder.solver.config.model,
            messages=(Message("user", bt.grading_request_text(code, problem, gold, attempts)),),
            max_tokens=c.grading_max_tokens, temperature=c.grading_temperature, seed=c.seed,
            call_type="bank_grade",
        )  # fmt: skip
        (res,) = yield [req]
        reply = res.text
        got = bt.read_scores(res.text, len(wrong)) if res.finish_reason != "error" else None
        if got is None:
            return ItemOutcome(q.item_id, tuple(trajs), correct, None, "grading_unparsed", reply, **done)
        scores.update(zip(wrong, got))
    if c.summary_prompt != "authors":
        (res,) = yield [builder.summary_request(item, [trajs[i] for i in kept], [correct[i] for i in kept])]
        return builder.outcome(item, trajs, correct, res, done)
    shown = [(_text(builder, trajs[i]), scores[i][0], scores[i][1]) for i in kept]
    table = [{"attempt": n + 1, "score": s, "reason": r} for n, (_, s, r) in enumerate(shown)]
    text = bt.summary_request_text(
        code, problem, gold, bt.attempts_text(code, shown), json.dumps(table, ensure_ascii=False)
    )
    req = ChatRequest(
        model=builder.solver.config.model, messages=(Message("user", text),),
        max_tokens=c.max_tokens, temperature=c.summary_temperature, seed=c.seed,
        call_type="bank_summarize",
    )  # fmt: skip
    (res,) = yield [req]
    read = bt.read_summary(code, res.text) if res.finish_reason != "error" else None
    if read is None:
        return ItemOutcome(q.item_id, tuple(trajs), correct, None, "summary_unparsed", res.text, **done)
    findings, cautions = read
    entry = NewEntry(
        source_id=q.item_id,
        dataset=item.source_set,
        question=q.text,
        context_head=q.context if c.entry_context == "whole" else q.context[: c.context_chars],
        findings=findings,
        cautions=cautions,
        answer=gold,
        images=q.images,
    )
    return ItemOutcome(q.item_id, tuple(trajs), correct, entry, None, res.text, **done)
