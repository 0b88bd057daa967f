"""A config's run at its GPU settings, shrunk in windows and items only (what ``--rehearse`` runs).

Moira: the config's own data path (:mod:`agent.reproduce.rehearse.moira_rehearsal`): its data in
the Herculean layout through the importer (the user's files, or a stand-in written in that
layout), its pool, backbones (thinking on/off), ``[model]`` (server-default sampling, the
16,384-token budgets), ``[prompt]`` (paper-scale news, descriptions), screen, variants, exposures
and every baseline as shipped; shrunk are the windows (at most 6 training and 8 test sessions per
windows set), the seeds (the first only), the replay cycles (one), the validation period (4
sessions, so a lifecycle boundary falls inside the test window), EG-DDQN's training and the reply
fields' length (the random stand-ins would fill an unbounded one); every stage it runs is checked.

FinAcumen: the config's plan on its own datasets, items, trajectories and tool steps shrunk
(:mod:`agent.reproduce.rehearse.qa_rehearsal`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from agent.reproduce.spec import ReproConfig
from localfin.errors import ConfigError

__all__ = [
    "REHEARSAL_QA_ITEMS",
    "REHEARSAL_QA_STEPS",
    "RehearsalSize",
    "SIZES",
    "SMALLEST",
    "run_config",
]

#: test items per evaluation set and bank items per source
REHEARSAL_QA_ITEMS = 2
REHEARSAL_QA_STEPS = 2


@dataclass(frozen=True)
class RehearsalSize:
    """How far a rehearsal shrinks: Moira's most training and test sessions per windows set and
    validation period; FinAcumen's test items per set, tool steps, bank items and trajectories
    per bank item. The defaults are ``--rehearse``'s (module docstring)."""

    train_sessions: int = 6
    test_sessions: int = 8
    validation_period: int = 4
    qa_items: int = REHEARSAL_QA_ITEMS
    qa_steps: int = REHEARSAL_QA_STEPS
    bank_items: int = 2
    bank_k: int = 2
    #: the model-only Base's completion budget (tokens; 0: the config's). The random stand-ins
    #: never write an answer line, so each Base reply runs to this budget.
    qa_base_tokens: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            least = 0 if f.name == "qa_base_tokens" else 1
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise ConfigError(f"RehearsalSize.{f.name}={v!r}; allowed: a whole number >= {least}")
        if 0 < self.qa_base_tokens < 16:
            raise ConfigError(f"RehearsalSize.qa_base_tokens={self.qa_base_tokens}; allowed: 0 or >= 16")
        if self.validation_period >= self.test_sessions:
            raise ConfigError(
                f"RehearsalSize.validation_period={self.validation_period}; allowed: fewer than "
                f"test_sessions={self.test_sessions} (a lifecycle boundary must fall in the test window)"
            )


#: The least that still sends every call type (the default suite's rehearsal): two training
#: sessions (a pair chosen, one direction each, one reflection cycle), four test sessions with a
#: lifecycle boundary after two (break_check), FinMem on the same windows; one QA test item per
#: set (one with a chart image: the rehearsal lists those first), one tool step, and one bank
#: item with one trajectory; the model-only Base's budget 64 tokens (the random model's free text
#: runs to the budget: the configs' 4,096 would make each Base call the longest of the run).
SMALLEST = RehearsalSize(
    train_sessions=2,
    test_sessions=4,
    validation_period=2,
    qa_items=1,
    qa_steps=1,
    bank_items=1,
    bank_k=1,
    qa_base_tokens=64,
)


#: the sizes ``localfin reproduce rehearse --size`` names
SIZES = {"default": RehearsalSize(), "smallest": SMALLEST}


def run_config(
    cfg: ReproConfig,
    out: Path,
    backend: Any,
    registry: Any,
    *,
    size: RehearsalSize = RehearsalSize(),
    data_root: Path | None = None,
) -> Mapping[str, Any]:
    """Run ``cfg`` shrunk (``size``) on ``backend`` (the stand-in router) into ``out``; returns
    what ran. ``data_root``: where a FinAcumen config's released benchmarks are (None: none)."""
    out.mkdir(parents=True, exist_ok=True)
    if cfg.kind == "moira":
        from agent.reproduce.rehearse.moira_rehearsal import run_moira_rehearsal

        return run_moira_rehearsal(cfg, out, backend, registry, size=size)
    from agent.reproduce.rehearse.qa_rehearsal import run_qa_rehearsal

    return run_qa_rehearsal(cfg, out, backend, registry, size=size, data_root=data_root)
