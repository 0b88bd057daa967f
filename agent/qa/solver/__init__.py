"""The FinAcumen solver: the ReAct loop as lockstep programs (:mod:`~agent.qa.solver.react`),
the Base variant's one call (:mod:`~agent.qa.solver.base_variant`), its settings
(:mod:`~agent.qa.solver.solver_config`), its replies read and recorded
(:mod:`~agent.qa.solver.solver_replies`), the final-answer rule
(:mod:`~agent.qa.solver.final_answer`), the answer gate (:mod:`~agent.qa.solver.gate`), the
tools of one run (:mod:`~agent.qa.solver.toolset`), OCR by the served model
(:mod:`~agent.qa.solver.model_ocr`) and each variant's protocol in words
(:mod:`~agent.qa.solver.protocol`)."""

from __future__ import annotations

__all__: list[str] = []
