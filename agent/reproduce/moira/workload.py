"""What a Moira reproduction config runs, counted per backbone entry: the agent's runs and the
training-window and test-window passes they make, and FinMem's runs and sessions where the
config runs FinMem on that backbone.

The count follows the runner itself: the config's matrix document with its ``[reproduce]
baselines`` (:func:`agent.reproduce.moira.run.with_baselines`), expanded into its experiments
(:meth:`agent.pairs.experiment.matrix_config.MatrixConfig.cells`: per-backbone exposures, the
FinMem row on its fixed model only), and each experiment's runs grouped as
:func:`agent.pairs.experiment.backtest.moira_group_program` groups them
(:func:`~agent.pairs.experiment.backtest.training_groups`: one warmup per group, A3's two
conditions sharing it, a replay cycle per consolidating training at most, the two exposures of
a seed sharing their training under ``pairing = "paired"``). Sessions are counted as decision
steps (a window of N sessions asks N - 1 directions and at most N lifecycle and selection calls
besides; the plan multiplies by the calls a step makes in the rehearsal).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["BackboneWork", "moira_work"]


@dataclass(frozen=True)
class BackboneWork:
    """One backbone entry's share of a config: agent runs, training-window passes (warmups and
    replays, at most), their sessions and the test sessions; FinMem's runs and sessions."""

    runs: int = 0
    trainings: int = 0
    train_passes: int = 0
    train_steps: int = 0
    test_steps: int = 0
    finmem_runs: int = 0
    finmem_steps: int = 0

    @property
    def steps(self) -> int:
        return self.train_steps + self.test_steps + self.finmem_steps

    def plus(self, other: BackboneWork) -> BackboneWork:
        return BackboneWork(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))

    def describe(self) -> str:
        out = (
            f"{self.runs} agent runs ({self.trainings} training phases, {self.train_passes} training-window "
            f"passes at most: {self.train_steps} steps; {self.test_steps} test steps)"
        )
        if self.finmem_runs:
            out += f" + {self.finmem_runs} FinMem runs ({self.finmem_steps} steps)"
        return out


def moira_work(
    document: Mapping[str, Any],
    baselines: tuple[str, ...],
    sessions: Callable[[Any], tuple[int, int]],
) -> dict[str, BackboneWork]:
    """Per backbone entry name (the config's order), what its experiments run.

    ``sessions``: ``(training, test)`` sessions of an experiment's windows (an
    :class:`~agent.pairs.experiment.config.ExperimentConfig` and the windows set's name), e.g.
    the paper's counts or a store's calendar."""
    from pathlib import Path

    from agent.pairs.experiment.backtest import RunSpec, training_groups, training_rounds
    from agent.pairs.experiment.matrix_config import parse_matrix
    from agent.reproduce.moira.run import with_baselines

    doc, _ = with_baselines(document, baselines)
    out: dict[str, BackboneWork] = {}
    for cell in parse_matrix(doc, base_dir=Path(".")).cells():
        cfg = cell.config
        n_train, n_test = sessions((cfg, cell.windows.name))
        specs = [RunSpec(rid, v, e, s) for rid, v, e, s in cfg.run_ids()]
        groups = training_groups(specs, cfg.pairing)
        passes = sum(training_rounds(g, cfg.pairing) for g in groups)
        fm_runs = len(cfg.seeds) * len(cfg.exposures) if "finmem" in cfg.baselines.methods else 0
        work = BackboneWork(
            runs=len(specs),
            trainings=len(groups),
            train_passes=passes,
            train_steps=passes * n_train,
            test_steps=len(specs) * n_test,
            finmem_runs=fm_runs,
            finmem_steps=fm_runs * (n_train + n_test),
        )
        name = cell.backbone.name
        out[name] = out[name].plus(work) if name in out else work
    return out
