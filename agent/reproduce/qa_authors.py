"""The ``[qa]`` keys of the FinAcumen authors' released code (:class:`agent.reproduce.qa_plan.QAPlan`'s
section "the authors' code"): their checks, and what a run of a plan sets up from them: the
authors' checkout opened (and when), and the lines that say which of their texts a run read.

A plan needs the checkout when one of its settings sends the authors' texts
(:func:`authors_settings`): ``base``, ``loop``, ``memory_block``, ``bank_grading``,
``summary_prompt`` or ``judge_protocol`` set to ``authors``. Loading a config never opens it
(``reproduce settings``, ``plan`` and the tests read configs on machines without it); a run opens
it before any model call (:func:`open_for`), so a checkout that is missing or differs stops the
run there, named.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "LOOPS",
    "READINGS",
    "MEMORY_MODES",
    "ENTRY_CONTEXTS",
    "GRADINGS",
    "SUMMARY_PROMPTS",
    "JUDGE_PROTOCOLS",
    "FINMME_CONTEXTS",
    "CORPUS_LOOKUPS",
    "TAU_CALIBRATIONS",
    "check_authors_points",
    "authors_settings",
    "open_for",
    "authors_lines",
    "with_authors_code",
]

LOOPS = ("ours", "authors")  # = agent.qa.solver.solver_config.LOOPS (a test checks)
READINGS = ("ours", "authors")
MEMORY_MODES = ("test", "train")
ENTRY_CONTEXTS = ("head", "whole")
GRADINGS = ("scorer", "authors")
SUMMARY_PROMPTS = ("ours", "authors")
JUDGE_PROTOCOLS = ("ours", "authors")
FINMME_CONTEXTS = ("caption_related", "caption")
CORPUS_LOOKUPS = ("bm25", "exact")
TAU_CALIBRATIONS = ("none", "hit_rate")

_CHOICES = (
    ("loop", LOOPS),
    ("answer_reading", READINGS),
    ("base_reading", READINGS),
    ("memory_mode", MEMORY_MODES),
    ("entry_context", ENTRY_CONTEXTS),
    ("bank_grading", GRADINGS),
    ("summary_prompt", SUMMARY_PROMPTS),
    ("judge_protocol", JUDGE_PROTOCOLS),
    ("finmme_context", FINMME_CONTEXTS),
    ("corpus_lookup", CORPUS_LOOKUPS),
    ("tau_calibration", TAU_CALIBRATIONS),
)
#: the keys whose value ``authors`` sends the authors' texts
_TEXT_KEYS = ("base", "loop", "memory_block", "bank_grading", "summary_prompt", "judge_protocol")


def check_authors_points(plan: Any) -> None:
    """ConfigError naming the first bad key of the section (allowed values, ranges, and the
    budgets the authors' loop and summary need)."""
    for key, allowed in _CHOICES:
        if getattr(plan, key) not in allowed:
            raise ConfigError(f"qa.{key}={getattr(plan, key)!r}; allowed: {', '.join(allowed)}")
    if not 0.0 <= plan.grading_temperature <= 2.0:
        raise ConfigError(f"qa.grading_temperature={plan.grading_temperature}; allowed: 0..2")
    if not 16 <= plan.grading_max_tokens <= 131_072:
        raise ConfigError(f"qa.grading_max_tokens={plan.grading_max_tokens}; allowed: 16..131072")
    if plan.judge_max_tokens is not None and not 1 <= plan.judge_max_tokens <= 4096:
        raise ConfigError(f"qa.judge_max_tokens={plan.judge_max_tokens}; allowed: 1..4096 or unset")
    if not 0.0 < plan.tau_hit_rate <= 1.0:
        raise ConfigError(f"qa.tau_hit_rate={plan.tau_hit_rate}; allowed: (0, 1]")
    if plan.loop == "authors" and plan.max_tokens is None:
        raise ConfigError(
            "qa.loop='authors' needs qa.max_tokens (their per-step budget: 1024); allowed: 16..131072"
        )
    if plan.summary_prompt == "authors" and plan.summary_max_tokens is None:
        raise ConfigError("qa.summary_prompt='authors' needs qa.summary_max_tokens (theirs: 8192)")


def authors_settings(plan: Any) -> tuple[str, ...]:
    """The keys of ``plan`` that send the authors' texts (``key = "authors"``)."""
    return tuple(k for k in _TEXT_KEYS if getattr(plan, k) == "authors")


def open_for(plan: Any) -> Any:
    """The authors' checkout ``plan`` needs (:class:`agent.qa.authors.checkout.AuthorsCode`),
    read and checked now; None when no setting needs it."""
    needs = authors_settings(plan)
    if not needs:
        return None
    from agent.qa.authors.checkout import AuthorsCodeError, open_authors_code

    if not plan.authors_code:
        raise AuthorsCodeError(
            f"qa.authors_code is empty, and {', '.join(f'qa.{k}' for k in needs)} = 'authors' send the "
            "authors' prompt texts, read at run time from their code; allowed: the path of a checkout of "
            "CamelliaLilium/FinAcumen at commit 16246593c75e81fac0b57c05e739761dae3e6fe9 (qa.authors_code = "
            "PATH, or --authors-code PATH on the command line)"
        )
    return open_authors_code(plan.authors_code, verify=plan.authors_code_verify)


def authors_lines(code: Any, names: Sequence[str] | None = None) -> list[str]:
    """One line per text of theirs a run read (name, file:lines, sha256), for its report."""
    if code is None:
        return []
    rows = code.records()
    if names is not None:
        rows = [r for r in rows if r["name"] in names]
    differs = " (differs from the pinned commit)"
    return [f"{r['name']}: {r['file']} sha256 {r['sha256']}{'' if r['pinned'] else differs}" for r in rows]


def with_authors_code(cfgs: Sequence[Any], path: Any) -> list[Any]:
    """``cfgs`` with ``qa.authors_code`` set to ``path`` in each FinAcumen config (the command
    line's ``--authors-code``, which wins over the file's); the same configs when ``path`` is
    None."""
    from dataclasses import replace

    if path is None:
        return list(cfgs)
    return [replace(c, qa=replace(c.qa, authors_code=str(path))) if c.qa is not None else c for c in cfgs]
