"""Where the questions come from: one entry point for every benchmark
(:mod:`~agent.qa.data.datasets`, over the layouts of :mod:`agent.qa.loaders`), the datasets and
tools of plugins (:mod:`~agent.qa.data.extensions`), the inputs the authors' code reads from the
gold (:mod:`~agent.qa.data.gold_inputs`), a fixed train/test partition for a benchmark that
ships none (:mod:`~agent.qa.data.holdout`) and the bundled demo set
(:mod:`~agent.qa.data.demo_set`)."""

from __future__ import annotations

__all__: list[str] = []
