"""A config's run at its GPU settings, shrunk in windows and items only (what ``--rehearse`` runs).

Moira: the config's own data path (:mod:`agent.reproduce.rehearse.moira_rehearsal`): its data in
the Herculean layout through the importer (the user's files, or a stand-in written in that
layout), its pool, backbones (thinking on/off), ``[model]`` (server-default sampling, the
16,384-token budgets), ``[prompt]`` (paper-scale news, descriptions), screen, variants, exposures
and every baseline as shipped; shrunk are the windows (at most 6 training and 8 test sessions per
windows set), the seeds (the first only), the replay cycles (one), the validation period (4
sessions, so a lifecycle boundary falls inside the test window), EG-DDQN's training and the reply
fields' length (the random stand-ins would fill an unbounded one); every stage it runs is checked.

FinAcumen: the config's plan with its model, variants, tau, k_max and bank-size grid; shrunk
are the items (the bundled demo set: 2 bank items, 2 test items for each of the first two sets,
one of them with a chart image, so the vision model gets it), the trajectories per bank
item (2) and the tool steps (2); the tools are those the demo set can use. A config that
grades FinTMMBench with a judge also sends one judge call (a demo answer graded by its judge
model), since the demo set itself is not judged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from agent.reproduce.spec import QAPlan, ReproConfig
from localfin.errors import ConfigError

__all__ = [
    "REHEARSAL_QA_ITEMS",
    "REHEARSAL_QA_STEPS",
    "RehearsalSize",
    "SMALLEST",
    "rehearsal_plan",
    "run_config",
]

#: test items per set (the rehearsal's demo set lists its items with images first, so even one
#: makes the vision model get an image in Base; two also send one without)
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

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"RehearsalSize.{f.name}={v!r}; allowed: a whole number >= 1")
        if self.validation_period >= self.test_sessions:
            raise ConfigError(
                f"RehearsalSize.validation_period={self.validation_period}; allowed: fewer than "
                f"test_sessions={self.test_sessions} (a lifecycle boundary must fall in the test window)"
            )


#: The least that still sends every call type (the default suite's rehearsal): two training
#: sessions (a pair chosen, one direction each, one reflection cycle), four test sessions with a
#: lifecycle boundary after two (break_check), FinMem on the same windows; one QA test item per
#: set (one with a chart image: the rehearsal lists those first), one tool step, and one bank
#: item with one trajectory.
SMALLEST = RehearsalSize(
    train_sessions=2, test_sessions=4, validation_period=2, qa_items=1, qa_steps=1, bank_items=1, bank_k=1
)


def _images_first(set_dir: Path) -> Path:
    """The demo set with its items that carry images first within each split (a stable sort),
    so that a rehearsal of one test item still sends the vision model an image."""
    f = set_dir / "items.jsonl"
    rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows.sort(key=lambda r: not r.get("images"))
    text = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    f.write_text(text, encoding="utf-8")
    return set_dir


def rehearsal_plan(cfg: ReproConfig, out: Path, size: RehearsalSize = RehearsalSize()) -> QAPlan:
    """The config's QA plan on the demo set, items and steps shrunk (module docstring)."""
    from agent.qa.demo_set import build_demo_set
    from agent.reproduce.qa_run import shrink_plan
    from agent.reproduce.run import _smoke_store

    assert cfg.qa is not None
    plan = cfg.qa
    demo = _images_first(build_demo_set(out / "qa_set", seed=0, n_train=4, n_test=4))
    store = _smoke_store(out) if "lookup" in plan.tools else None
    small = shrink_plan(
        plan, demo, model=plan.model, n_items=size.qa_items, max_steps=size.qa_steps, store=store
    )
    bank = tuple(replace(s, limit=size.bank_items) for s in small.bank)
    judge = plan.judge_model if plan.judge_model == plan.model else ""
    return replace(small, judge_model=judge, bank=bank, bank_k=size.bank_k)


def run_config(
    cfg: ReproConfig, out: Path, backend: Any, registry: Any, *, size: RehearsalSize = RehearsalSize()
) -> Mapping[str, Any]:
    """Run ``cfg`` shrunk (``size``) on ``backend`` (the stand-in router) into ``out``; returns
    what ran."""
    out.mkdir(parents=True, exist_ok=True)
    if cfg.kind == "moira":
        from agent.reproduce.rehearse.moira_rehearsal import run_moira_rehearsal

        return run_moira_rehearsal(cfg, out, backend, registry, size=size)
    from agent.reproduce.qa_run import run_qa

    plan = rehearsal_plan(cfg, out, size)
    run_qa(cfg, out, backend=backend, registry=registry, data_root=out, plan=plan)
    _judge(cfg, out, backend)
    return {"plan": plan}


def _judge(cfg: ReproConfig, out: Path, backend: Any) -> None:
    """The judge call of a config that grades FinTMMBench (the demo set is not judged by the
    run): one demo test item's answer graded by the plan's judge, journaled in
    ``out/judge/judge.sqlite``."""
    from agent.qa.datasets import load_items
    from agent.qa.judge import judge_requests
    from agent.qa.judge_pass import JUDGED_DATASETS
    from serving.journal import Journal, JournaledBackend

    assert cfg.qa is not None
    if not any(s.dataset in JUDGED_DATASETS for s in cfg.qa.sets):
        return
    items = load_items("demo", out / "qa_set", split="test", limit=1).items
    (out / "judge").mkdir(exist_ok=True)
    with Journal(out / "judge" / "judge.sqlite") as j:
        JournaledBackend(backend, j).chat(judge_requests(items, ["42"] * len(items), cfg.qa.judge))
