"""The score of one prediction: the value every scorer returns (benchmark rules in
:mod:`agent.qa.scoring.scoring`, the judge model in :mod:`agent.qa.scoring.judge`), kept apart from both so
that neither imports the other."""

from __future__ import annotations

from dataclasses import dataclass

from localfin.errors import ConfigError

__all__ = ["ItemScore"]

_MAX_DETAIL = 240


@dataclass(frozen=True)
class ItemScore:
    """The score of one prediction.

    Attributes:
        correct: the benchmark's right/wrong verdict (TAT-QA: exact match).
        score: in [0, 1]; 1.0/0.0 for right/wrong benchmarks, F1 for TAT-QA.
        detail: a short explanation (what was compared, the error, the tolerance).
    """

    correct: bool
    score: float
    detail: str

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.score) <= 1.0:
            raise ConfigError(f"ItemScore.score={self.score}; allowed: 0..1")
        if len(self.detail) > _MAX_DETAIL:
            object.__setattr__(self, "detail", self.detail[: _MAX_DETAIL - 3] + "...")
