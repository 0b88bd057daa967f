"""Running the solver over sets of items, one run folder each: the experience bank built from
training items (:mod:`~agent.qa.evaluation.bank_build`), the variants evaluated on test items
(:mod:`~agent.qa.evaluation.evaluate`), one variant whole with its bank-size x k_max sweep and
scoring passes (:mod:`~agent.qa.evaluation.sweep`), the batching of many programs on one engine
they share (:mod:`~agent.qa.evaluation.programs`) and the QA part of the CPU demo
(:mod:`~agent.qa.evaluation.demo`)."""

from __future__ import annotations

__all__: list[str] = []
