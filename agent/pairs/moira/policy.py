"""Policy memory: replay-gated consolidation of transferable principles (paper D.1).

1. Warmup: run the training window with no principles (No-Beta sizing).
2. Reflection: the ``reflection`` call reads the latest round's decisions with every action's
   counterfactual PnL and proposes 1-3 principles; code drops those that name a ticker,
   company, pair, date, step or a direction as ``direction_rule`` says
   (:mod:`agent.pairs.moira.principles`), recording the rule each broke; with
   ``any_recommendation`` a reply whose reflection text breaks A.3's ban loses all of them
   (rule ``reflection_<rule>``).
3. Replay: the training window again, with the candidate set = accepted principles + the new
   valid ones (the oldest dropped beyond ``max_principles``). Accepted only if the cumulative
   training return (sum of daily returns) is strictly higher than the best so far; otherwise
   the accepted set is kept (roll back).
4. Repeat 2-3 for at most ``max_cycles`` cycles; stop after ``stop_after_rejections``
   rejections in a row. A reflection without a usable reply or without a valid principle is a
   rejected cycle without a replay (replaying the same set would repeat the same round).

With ``consolidation = false`` (ablation A3) the warmup reflection's valid principles are
kept as they are, without replay. Each training round starts with an empty pair-quality memory
so that rounds differ only in their principles; the test starts from the memory of the round
whose principles were accepted last (the warmup when none was).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from agent.pairs.market.masking import StepCalendar, contains_calendar_leak
from agent.pairs.moira import calls, payloads
from agent.pairs.moira.config import PolicyConfig
from agent.pairs.moira.episode import RunContext, WindowResult, WindowSpec, call, run_window
from agent.pairs.moira.memory import PairMemory
from agent.pairs.moira.principles import PrincipleCheck, PrincipleValidator
from agent.pairs.moira.stats import PhaseStats
from serving.types import ChatRequest, ChatResult

__all__ = ["CycleRecord", "PolicyOutcome", "train_policy"]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]


@dataclass(frozen=True)
class CycleRecord:
    """One training cycle (0 = warmup) as ``training.json`` stores it.

    candidate: the principle set replayed (empty for the warmup); proposed: the reflection's
    principles; rejected: ``[{"text", "rule"}]`` dropped by the validator; training_return:
    sum of the round's daily returns (None when no replay ran); accepted: the candidate became
    the policy; reason: why not, when not.
    """

    cycle: int
    candidate: tuple[str, ...]
    proposed: tuple[str, ...]
    rejected: tuple[dict[str, str], ...]
    training_return: float | None
    accepted: bool
    reason: str = ""
    reflection: str = ""
    best_return_after: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "cycle": self.cycle,
            "candidate_principles": list(self.candidate),
            "proposed_principles": list(self.proposed),
            "rejected_principles": [dict(r) for r in self.rejected],
            "training_return": self.training_return,
            "accepted": self.accepted,
            "reason": self.reason,
            "reflection": self.reflection,
            "best_return_after": self.best_return_after,
        }


@dataclass
class PolicyOutcome:
    """The frozen policy for the test window and the record of how it was reached."""

    principles: tuple[str, ...]
    pair_memory: PairMemory
    cycles: list[CycleRecord]
    stats: PhaseStats = field(default_factory=PhaseStats)
    stop_reason: str = ""
    best_return: float = 0.0
    accepted_updates: int = 0


def _reflect(
    ctx: RunContext,
    rnd: WindowResult,
    validator: PrincipleValidator,
    keep: tuple[str, ...],
    feedback: list[dict[str, str]],
    stats: PhaseStats,
    cycle: int,
    feedback_on: bool = False,
) -> Gen:
    """The reflection call on ``rnd``; returns (valid, proposed, rejected, reflection, fallback).

    The payload is A.6's (the round's decisions, win rate, mean PnL, counterfactual counts).
    With ``reflection_feedback`` it also carries the accepted principles (``keep``) and what the
    previous cycle's proposals came to (``feedback``: text and why they were not kept), so that
    a cycle after a rejection without a replay does not repeat the identical request (which
    the journal would answer identically).
    """

    cal = StepCalendar.from_sessions(rnd.spec.sessions)
    n = len(rnd.spec.sessions)
    payload = payloads.reflection_payload(
        cal.label_at(n - 1), rnd.records, ctx.prompt, lambda k: cal.label_at(k - 1)
    )
    if feedback_on:
        payload["accepted_principles"] = list(keep)
        payload["previous_proposals"] = feedback
    req = calls.reflection_request(ctx.settings, payload)
    # every record of the round, settled at the session after its decision
    ctx.trace.provenance.record(
        req,
        phase="train",
        round=cycle,
        step=n,
        decision_date=rnd.spec.sessions[-1],
        prices=[rnd.spec.sessions[r.step] for r in rnd.records],
    )
    res = yield from call(req)
    parsed = calls.parse_reflection(res, ctx.settings)
    stats.count_call(res, parsed.fallback)
    if parsed.fallback:
        ctx.trace.add(
            phase="train",
            round=cycle,
            step=0,
            date="",
            kind="reflection",
            pair="",
            result=res,
            fallback=parsed.fallback,
        )
        return (), (), (), "", parsed.fallback
    checks = validator.check(parsed.value["principles"], keep=keep)
    # A.3's ban covers the reflection text too (direction_rule "any_recommendation"): a reply
    # whose reflection breaks it is rejected as a whole
    broken = validator.reflection_rule(parsed.value["reflection"])
    if broken:
        checks = [PrincipleCheck(c.text, c.rule or f"reflection_{broken}") for c in checks]
    valid = tuple(c.text for c in checks if c.ok)
    rejected = tuple({"text": c.text, "rule": c.rule or ""} for c in checks if not c.ok)
    ctx.trace.add(
        phase="train",
        round=cycle,
        step=0,
        date="",
        kind="reflection",
        pair="",
        result=res,
        decision={"valid": list(valid), "rejected": [dict(r) for r in rejected]},
        detail={"reflection": parsed.value["reflection"]},
    )
    return valid, tuple(c.text for c in checks), rejected, parsed.value["reflection"], None


def _shown(text: str) -> str:
    """A proposal as the next reflection may see it: one with a calendar reference is not
    repeated (every model-visible text is masked)."""

    return "(a principle naming a date)" if contains_calendar_leak(text) else text


def _feedback(rec: CycleRecord) -> list[dict[str, str]]:
    """What became of a cycle's proposals, for the next reflection."""
    out = [
        {"principle": _shown(r["text"]), "outcome": f"rejected: names a {r['rule']}"} for r in rec.rejected
    ]
    if rec.training_return is not None:
        dropped = {r["text"] for r in rec.rejected}
        outcome = "accepted" if rec.accepted else "rolled back: training return did not improve"
        out += [{"principle": _shown(p), "outcome": outcome} for p in rec.proposed if p not in dropped]
    elif not rec.rejected:
        out.append({"principle": "", "outcome": "no usable reply"})
    return out


def train_policy(
    ctx: RunContext, sessions: tuple, policy: PolicyConfig, validator: PrincipleValidator
) -> Gen:
    """Run the training procedure; returns a :class:`PolicyOutcome`."""
    stats = PhaseStats()

    def replay(round_: int, principles: tuple[str, ...]) -> Gen:
        result = yield from run_window(
            ctx, WindowSpec("train", round_, tuple(sessions), "no_beta", principles, PairMemory())
        )
        stats.merge(result.stats)
        return result

    warm = yield from replay(0, ())
    best, best_ret, best_memory = (), warm.total_return, warm.pair_memory
    cycles = [CycleRecord(0, (), (), (), best_ret, True, "warmup", best_return_after=best_ret)]
    ctx.trace.add(
        phase="train", round=0, step=0, date="", kind="policy", pair="", decision=cycles[0].to_dict()
    )
    if not policy.consolidation:
        valid, proposed, rejected, text, fb = yield from _reflect(
            ctx, warm, validator, (), [], stats, 1, policy.reflection_feedback
        )
        kept = valid[-policy.max_principles :]
        rec = CycleRecord(
            1,
            kept,
            proposed,
            rejected,
            None,
            bool(kept),
            fb or ("" if kept else "no valid principle"),
            text,
            best_ret,
        )
        cycles.append(rec)
        ctx.trace.add(
            phase="train",
            round=1,
            step=0,
            date="",
            kind="policy",
            pair="",
            decision=rec.to_dict(),
            state_after="|".join(kept),
        )
        return PolicyOutcome(
            kept, best_memory, cycles, stats, "consolidation off (warmup reflection kept)", best_ret, 0
        )

    last, streak, accepted, stop = warm, 0, 0, f"max_cycles={policy.max_cycles} reached"
    feedback: list[dict[str, str]] = []
    for cycle in range(1, policy.max_cycles + 1):
        valid, proposed, rejected, text, fb = yield from _reflect(
            ctx, last, validator, best, feedback, stats, cycle, policy.reflection_feedback
        )
        if not valid:
            streak += 1
            rec = CycleRecord(
                cycle, (), proposed, rejected, None, False, fb or "no valid principle", text, best_ret
            )
        else:
            candidate = (best + valid)[-policy.max_principles :]
            rnd = yield from replay(cycle, candidate)
            ret = rnd.total_return
            ok = ret > best_ret
            if ok:
                best, best_ret, best_memory = candidate, ret, rnd.pair_memory
                streak, accepted = 0, accepted + 1
            else:
                streak += 1
            last = rnd
            reason = "" if ok else f"training return {ret:.6f} <= best {best_ret:.6f}: rolled back"
            rec = CycleRecord(cycle, candidate, proposed, rejected, ret, ok, reason, text, best_ret)
        cycles.append(rec)
        feedback = _feedback(rec)
        ctx.trace.add(
            phase="train",
            round=cycle,
            step=0,
            date="",
            kind="policy",
            pair="",
            decision=rec.to_dict(),
            state_before="",
            state_after="|".join(best),
        )
        if streak >= policy.stop_after_rejections:
            stop = f"{streak} rejections in a row"
            break
    return PolicyOutcome(best, best_memory, cycles, stats, stop, best_ret, accepted)
