"""Policy memory: replay-gated consolidation of transferable principles (paper D.1).

1. Warmup: run the training window with no principles (``train_exposure`` sizing: No-Beta,
   Appendix C), then the ``reflection`` call on it: it reads the round's decisions with every
   action's counterfactual PnL and proposes 1-3 principles; code drops those that name a
   ticker, company, pair, date, step or a direction as ``direction_rule`` says
   (:mod:`agent.pairs.moira.principles`), recording the rule each broke; with
   ``any_recommendation`` a reply whose reflection text breaks A.3's ban loses all of them
   (rule ``reflection_<rule>``). The valid ones are the warmup's reflection memory
   (:class:`Warmup`). Runs that differ only in what follows
   (:data:`agent.pairs.moira.config.CONSOLIDATION_FIELDS`: the two A3 conditions) share ONE
   warmup (:func:`warmup`, journaled once).
2. Replay: the training window again, with the candidate set = accepted principles + the new
   valid ones (the oldest dropped beyond ``max_principles``). Accepted only if the cumulative
   training return (sum of daily returns) is strictly higher than the best so far; otherwise
   the accepted set is kept (roll back). With ``warmup_floor`` (the default, paper §4.3.3 and
   D.1) the first candidate is the warmup's reflection memory itself: its replay measures it and
   it is kept whatever that return, so rollback never goes below it; later candidates must beat
   its return. Without it, the warmup memory is gated against the warmup round's return like
   any other candidate and consolidation can end with no principle.
3. Repeat: a reflection on the latest round, then 2, for at most ``max_cycles`` replay cycles
   (the first one reflects nothing new: it uses the warmup's reflection); stop after
   ``stop_after_rejections`` rejections in a row. A reflection without a usable reply or without
   a valid principle is a rejected cycle without a replay (replaying the same set would repeat
   the same round).

With ``consolidation = false`` (ablation A3's control) the warmup's reflection memory is kept as
it is, without replay. Each training round starts with an empty pair-quality memory so that
rounds differ only in their principles; the test starts from the memory of the round whose
principles were accepted last (the warmup's for its own reflection memory, the floor, and when
nothing was accepted).
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
from serving.chat.types import ChatRequest, ChatResult

__all__ = ["CycleRecord", "PolicyOutcome", "Warmup", "warmup", "consolidate", "train_policy"]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]


@dataclass(frozen=True)
class CycleRecord:
    """One training cycle (0 = warmup) as ``training.json`` stores it.

    candidate: the principle set replayed (empty for the warmup); proposed: the reflection's
    principles; rejected: ``[{"text", "rule"}]`` dropped by the validator; training_return:
    sum of the round's daily returns (None when no replay ran); accepted: the candidate became
    the policy; reason: why not, when not; floor: the candidate is the warmup's reflection
    memory, kept as the floor of rollback without the gate (``warmup_floor``).
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
    floor: bool = False

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
            "floor": self.floor,
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
    #: the valid principles of the warmup's reflection (its reflection memory)
    warmup_principles: tuple[str, ...] = ()


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


@dataclass
class Warmup:
    """The shared warmup: its round (no principles) and the reflection on it (valid, proposed
    and rejected principles, the reflection text, the fallback reason of an unusable reply)."""

    round: WindowResult
    stats: PhaseStats
    valid: tuple[str, ...]
    proposed: tuple[str, ...]
    rejected: tuple[dict[str, str], ...]
    reflection: str
    fallback: str | None

    @property
    def record(self) -> CycleRecord:
        """Cycle 0 as ``training.json`` stores it."""
        ret = self.round.total_return
        return CycleRecord(0, (), (), (), ret, True, "warmup", best_return_after=ret)


def warmup(ctx: RunContext, sessions: tuple, policy: PolicyConfig, validator: PrincipleValidator) -> Gen:
    """The warmup round and its reflection (module docstring, step 1); returns a :class:`Warmup`.
    ``policy`` matters only through :meth:`PolicyConfig.warmup_part` (the reflection payload and
    the validator's settings)."""
    stats = PhaseStats()
    spec = WindowSpec("train", 0, tuple(sessions), policy.train_exposure, (), PairMemory())
    warm = yield from run_window(ctx, spec)
    stats.merge(warm.stats)
    ret = warm.total_return
    rec0 = CycleRecord(0, (), (), (), ret, True, "warmup", best_return_after=ret)
    ctx.trace.add(phase="train", round=0, step=0, date="", kind="policy", pair="", decision=rec0.to_dict())
    valid, proposed, rejected, text, fb = yield from _reflect(
        ctx, warm, validator, (), [], stats, 1, policy.reflection_feedback
    )
    return Warmup(warm, stats, valid, proposed, rejected, text, fb)


def consolidate(
    ctx: RunContext, sessions: tuple, policy: PolicyConfig, validator: PrincipleValidator, warm: Warmup
) -> Gen:
    """What ``policy`` does after the shared ``warm``-up (module docstring, steps 2-3, or the A3
    control); returns a :class:`PolicyOutcome`. ``ctx`` carries this training's own trace."""
    stats = PhaseStats()
    stats.merge(warm.stats)

    def replay(round_: int, principles: tuple[str, ...]) -> Gen:
        result = yield from run_window(
            ctx, WindowSpec("train", round_, tuple(sessions), policy.train_exposure, principles, PairMemory())
        )
        stats.merge(result.stats)
        return result

    first = warm.round
    warm_ret = first.total_return
    cycles = [warm.record]
    keep_warm = not policy.consolidation or (policy.warmup_floor and policy.max_cycles == 0)
    if keep_warm:
        kept = warm.valid[-policy.max_principles :]
        rec = CycleRecord(
            1,
            kept,
            warm.proposed,
            warm.rejected,
            None,
            bool(kept),
            warm.fallback or ("" if kept else "no valid principle"),
            warm.reflection,
            warm_ret,
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
        why = (
            "consolidation off (warmup reflection kept)"
            if not policy.consolidation
            else "max_cycles=0: the warmup reflection memory kept (warmup_floor)"
        )
        return PolicyOutcome(kept, first.pair_memory, cycles, stats, why, warm_ret, 0, warm.valid)

    best, best_ret, best_memory = (), warm_ret, first.pair_memory
    last, streak, accepted, stop = first, 0, 0, f"max_cycles={policy.max_cycles} reached"
    feedback: list[dict[str, str]] = []
    for cycle in range(1, policy.max_cycles + 1):
        if cycle == 1:  # the warmup's own reflection: shared, asked once
            valid, proposed, rejected, text, fb = (
                warm.valid,
                warm.proposed,
                warm.rejected,
                warm.reflection,
                warm.fallback,
            )
        else:
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
            floor = cycle == 1 and policy.warmup_floor
            ok = floor or ret > best_ret
            if floor:
                # the warmup's reflection memory (with the warmup round's pair-quality memory,
                # as the A3 control keeps it): the floor of rollback, measured by this replay
                best, best_ret, best_memory = candidate, ret, first.pair_memory
                reason = "warmup reflection memory: kept as the floor of rollback (warmup_floor)"
            elif ok:
                best, best_ret, best_memory = candidate, ret, rnd.pair_memory
                streak, accepted, reason = 0, accepted + 1, ""
            else:
                streak += 1
                reason = f"training return {ret:.6f} <= best {best_ret:.6f}: rolled back"
            last = rnd
            rec = CycleRecord(cycle, candidate, proposed, rejected, ret, ok, reason, text, best_ret, floor)
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
    return PolicyOutcome(best, best_memory, cycles, stats, stop, best_ret, accepted, warm.valid)


def train_policy(
    ctx: RunContext, sessions: tuple, policy: PolicyConfig, validator: PrincipleValidator
) -> Gen:
    """The whole training procedure of one run (its own warmup, then :func:`consolidate`);
    returns a :class:`PolicyOutcome`."""
    warm = yield from warmup(ctx, sessions, policy, validator)
    return (yield from consolidate(ctx, sessions, policy, validator, warm))
