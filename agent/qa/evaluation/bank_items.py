"""What the bank build is set by and what it makes of one item: :class:`BankBuildConfig`,
:class:`ItemOutcome`, and the trajectory texts the summariser reads (:func:`describe`, a
digest; :func:`describe_whole`, every step), shared by the build
(:mod:`agent.qa.evaluation.bank_build`) and the authors' grading
(:mod:`agent.qa.evaluation.authors_bank`)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from agent.qa.core.items import Gold
from agent.qa.core.trajectory import Trajectory
from agent.qa.scoring.judge import CANDIDATE_CHARS
from bank.schema import CONTEXT_CHARS, NewEntry
from localfin.errors import ConfigError

__all__ = [
    "SUMMARY_VIEWS",
    "GRADINGS",
    "SUMMARY_PROMPTS",
    "ENTRY_CONTEXTS",
    "BankBuildConfig",
    "ItemOutcome",
    "describe",
    "describe_whole",
    "answer_text",
    "gold_text",
]

#: what the summariser sees of each trajectory (:class:`BankBuildConfig` ``view``)
SUMMARY_VIEWS = ("digest", "whole")
#: ``scorer``: each benchmark's scorer grades a trajectory right or wrong; ``authors``: the
#: authors' grading (:mod:`agent.qa.evaluation.authors_bank`)
GRADINGS = ("scorer", "authors")
#: the summary prompt: ``ours`` (``qa_summarize``) or ``authors`` (theirs, from their checkout)
SUMMARY_PROMPTS = ("ours", "authors")
#: what an entry keeps of its item's context: ``head`` (``context_chars``) or ``whole``
ENTRY_CONTEXTS = ("head", "whole")


@dataclass(frozen=True)
class BankBuildConfig:
    """Bank construction settings.

    Attributes:
        k: trajectories per item (8 in the paper).
        temperature: their sampling temperature (> 0).
        seed: trajectory j of every item uses seed ``seed + j``.
        steps_chars: characters of one trajectory's digest shown to the summariser.
        lesson_chars: longest finding or caution (characters; 0: no bound).
        max_lessons: most findings and most cautions per entry (0: no bound).
        view: what the summariser sees of a trajectory, ``digest`` or ``whole``.
        summary_temperature: sampling temperature of the summary call.
        analysis: the summary reply starts with an analysis of the item.
        context_chars: context characters stored as the entry's head (and shown in the prompt).
        judge_candidate_chars: most characters of a trajectory's answer shown to the judge.
        max_tokens: summary reply budget; None = the schema's worst case.
        add_batch: entries per bank transaction.
        items_per_wave: items whose K trajectories run together (each trajectory holds a
            Python worker of ~30 MB while it runs); None: all items at once.
        grading: one of :data:`GRADINGS`.
        summary_prompt: one of :data:`SUMMARY_PROMPTS` (``authors`` needs ``max_tokens``).
        entry_context: one of :data:`ENTRY_CONTEXTS`.
        grading_temperature / grading_max_tokens: the authors' grading call's sampling
            temperature and budget (tokens).
    """

    k: int = 8
    temperature: float = 0.7
    seed: int = 0
    steps_chars: int = 500
    lesson_chars: int = 200
    max_lessons: int = 3
    context_chars: int = CONTEXT_CHARS
    max_tokens: int | None = None
    add_batch: int = 64
    items_per_wave: int | None = 8
    view: str = "digest"
    summary_temperature: float = 0.0
    analysis: bool = False
    judge_candidate_chars: int = CANDIDATE_CHARS
    grading: str = "scorer"
    summary_prompt: str = "ours"
    entry_context: str = "head"
    grading_temperature: float = 0.1
    grading_max_tokens: int = 4096

    def __post_init__(self) -> None:
        for name, allowed in (
            ("grading", GRADINGS), ("summary_prompt", SUMMARY_PROMPTS), ("entry_context", ENTRY_CONTEXTS)
        ):  # fmt: skip
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"BankBuildConfig.{name}={getattr(self, name)!r}; allowed: {', '.join(allowed)}"
                )
        if self.summary_prompt == "authors" and self.max_tokens is None:
            raise ConfigError("BankBuildConfig.summary_prompt='authors' needs max_tokens (their 8,192)")
        if not 0.0 <= self.grading_temperature <= 2.0 or not 16 <= self.grading_max_tokens <= 131_072:
            raise ConfigError(
                f"BankBuildConfig.grading_temperature={self.grading_temperature}, grading_max_tokens="
                f"{self.grading_max_tokens}; allowed: 0..2 and 16..131072"
            )
        if self.items_per_wave is not None and self.items_per_wave < 1:
            raise ConfigError(f"BankBuildConfig.items_per_wave={self.items_per_wave}; allowed: >= 1 or None")
        if not 1 <= self.k <= 64:
            raise ConfigError(f"BankBuildConfig.k={self.k}; allowed: 1..64")
        if not 0.0 < self.temperature <= 2.0:
            raise ConfigError(f"BankBuildConfig.temperature={self.temperature}; allowed: (0, 2]")
        if not 50 <= self.steps_chars <= 20_000:
            raise ConfigError(f"BankBuildConfig.steps_chars={self.steps_chars}; allowed: 50..20000")
        if self.lesson_chars and not 20 <= self.lesson_chars <= 2000:
            raise ConfigError(f"BankBuildConfig.lesson_chars={self.lesson_chars}; allowed: 0 or 20..2000")
        if not 0 <= self.max_lessons <= 10:
            raise ConfigError(f"BankBuildConfig.max_lessons={self.max_lessons}; allowed: 0..10")
        if self.view not in SUMMARY_VIEWS:
            raise ConfigError(f"BankBuildConfig.view={self.view!r}; allowed: {', '.join(SUMMARY_VIEWS)}")
        if not 0.0 <= self.summary_temperature <= 2.0:
            raise ConfigError(
                f"BankBuildConfig.summary_temperature={self.summary_temperature}; allowed: 0..2"
            )
        if (not self.lesson_chars or not self.max_lessons or self.analysis) and self.max_tokens is None:
            raise ConfigError(
                "BankBuildConfig: unbounded lessons or an analysis leave the summary reply without a "
                "worst case; allowed: set max_tokens"
            )
        if self.add_batch < 1:
            raise ConfigError(f"BankBuildConfig.add_batch={self.add_batch}; allowed: >= 1")


@dataclass(frozen=True)
class ItemOutcome:
    """One training item: its K trajectories, their correctness, and the entry (or why none)."""

    item_id: str
    trajectories: tuple[Trajectory, ...]
    correct: tuple[bool, ...]
    entry: NewEntry | None
    fallback: str | None = None  # summary_unparsed, summary_empty
    summary_reply: str = ""
    source_set: str = ""
    scored_by: str = ""  # the scorer's name, or "judge <model>"


def describe(traj: Trajectory, chars: int) -> str:
    """A short text of a trajectory's actions for the summariser."""
    parts = []
    for s in traj.steps:
        if s.kind in ("action", "final_forced") and s.action:
            if s.action == "final_answer":
                verdict = "" if s.gate is None else (" (check ok)" if s.gate["ok"] else " (check failed)")
                parts.append(f"answer {s.args.get('answer', '')!r}{verdict}")
            else:
                arg = json.dumps(s.args, ensure_ascii=False, sort_keys=True)[:160]
                out = s.observation[:120].replace("\n", " ")
                parts.append(f"{s.action} {arg} -> {'ok' if s.tool_ok else 'failed'}: {out}")
        elif s.fallback in ("bad_reply", "plan_unparsed"):
            parts.append("unusable reply")
    text = "; ".join(parts) or "no actions"
    return text if len(text) <= chars else text[: chars - 3] + "..."


def describe_whole(traj: Trajectory) -> str:
    """Every step of a trajectory, uncut: the plan, then each action's thought, action,
    arguments and output (or the check's reasons, or what was wrong with the reply)."""
    parts = []
    for s in traj.steps:
        if s.kind == "plan":
            parts.append(f"[plan]\n{s.thought or s.reply}")
        elif s.kind in ("action", "final_forced"):
            if not s.action:
                parts.append(f"[unusable reply]\n{s.reply}\n[told]\n{s.observation}")
                continue
            args = json.dumps(s.args, ensure_ascii=False, sort_keys=True)
            parts.append(f"[thought]\n{s.thought}\n[{s.action}]\n{args}")
            if s.action == "final_answer" and s.gate is not None:
                verdict = "passed" if s.gate.get("ok") else "failed: " + "; ".join(s.gate.get("reasons", []))
                parts.append(f"[answer check] {verdict}")
            elif s.observation:
                parts.append(f"[{s.action} output{'' if s.tool_ok else ', failed'}]\n{s.observation}")
    return "\n\n".join(parts) or "no steps"


def gold_text(gold: Gold) -> str:
    """The gold answer as the summariser and an entry show it (a scale written after it)."""
    ans = gold.answer
    text = ", ".join(str(a) for a in ans) if isinstance(ans, (list, tuple)) else str(ans)
    return f"{text} ({gold.scale})" if gold.scale else text


def answer_text(t: Trajectory) -> str:
    """A trajectory's answer as one string (a separate scale field written after it)."""
    if not t.answer_scale or not t.answer:
        return t.answer
    return f"{t.answer}%" if t.answer_scale == "percent" else f"{t.answer} {t.answer_scale}"
