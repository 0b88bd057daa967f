"""FinAcumen: a tool-grounded ReAct agent for financial QA with a selective experience memory,
one subpackage per stage:

* :mod:`agent.qa.core`: what every stage shares: the item with its gold kept apart, the score of
  one answer, numbers and answer forms, reply schemas, the trajectory record, run folders;
* :mod:`agent.qa.sandbox`, :mod:`agent.qa.tools` and :mod:`agent.qa.loaders`: the sandbox that
  runs model-written Python, the deterministic tools (one module each) and the benchmarks'
  released layouts (one module each); :mod:`agent.qa.authors`, beside them: the FinAcumen
  authors' code read at run time from a user's checkout (their prompt texts, checked against the
  pinned commit, and the messages their code builds);
* :mod:`agent.qa.data`: the benchmarks behind one entry point, plugins' datasets and tools, the
  gold-derived inputs, the holdout partition and the demo set;
* :mod:`agent.qa.scoring`: each benchmark's metric, scorers by name, the judge and the answer
  extraction, and their passes over a finished run;
* :mod:`agent.qa.memory`: retrieval from the experience bank and the annotator at inference;
* :mod:`agent.qa.solver`: the ReAct loop, the Base variant, the answer gate and the toolset;
* :mod:`agent.qa.evaluation`: the bank build, the evaluation of the variants, the sweeps and the
  CPU demo, one run folder each;
* :mod:`agent.qa.analysis`: figures, intervals and cuts read back from finished run folders;
* :mod:`agent.qa.cluster`: the bank build, evaluations and passes sharded over a Ray cluster.

Imports run down this list (``memory`` beside ``scoring``, ``analysis`` beside ``evaluation``:
neither imports the other); a test checks it.
"""

from __future__ import annotations

__all__ = ["CALL_TYPES"]

#: The model calls of FinAcumen (their ``call_type`` labels; the agent owns these names): the
#: solver's plan/action steps, the Base variant's one call, the memory annotator, the bank
#: summarizer, the authors' grading of the bank's wrong trajectories, the judge and the answer
#: extractor (FinMMR's official scoring).
CALL_TYPES = ("qa_solve", "qa_base", "qa_annotate", "bank_summarize", "bank_grade", "judge", "answer_extract")
