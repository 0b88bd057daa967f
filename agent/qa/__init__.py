"""FinAcumen: a tool-grounded ReAct agent for financial QA with a selective experience memory."""

from __future__ import annotations

__all__ = ["CALL_TYPES"]

#: The model calls of FinAcumen (their ``call_type`` labels; the agent owns these names): the
#: solver's plan/action steps, the Base variant's one call, the memory annotator, the bank
#: summarizer, the judge and the answer extractor (FinMMR's official scoring).
CALL_TYPES = ("qa_solve", "qa_base", "qa_annotate", "bank_summarize", "judge", "answer_extract")
