"""FinAcumen owns its call-type labels: a bank build and the three variants journal only labels
that ``agent.qa.CALL_TYPES`` declares (serving accepts any label and lists none)."""

from __future__ import annotations

import sqlite3

from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa import CALL_TYPES
from agent.qa.evaluation.bank_build import BankBuildConfig, build_bank
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.memory.memory import ExperienceMemory, MemoryConfig
from agent.qa.solver.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.retrieval import Retriever
from bank.store import ExperienceBank


def test_every_journaled_call_type_is_declared(tmp_path):
    emb = HashingEmbedder(dim=64)
    tools = lambda q: [Calculator()]  # noqa: E731
    cfg = SolverConfig(model="m", max_steps=2)
    used: set[str] = set()
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(
            change_items(2, "train"),
            QASolver(cfg, tools=tools),
            qa_backend(),
            bank,
            emb,
            tmp_path / "build",
            config=BankBuildConfig(k=2),
            scorer=num_scorer,
        )
        memory = ExperienceMemory(Retriever(bank, emb), MemoryConfig(tau=0.0))
        for v in ("base", "ft", "ft_fm"):
            evaluate(
                change_items(2, "test"),
                qa_backend(),
                tmp_path / v,
                EvalConfig(v, cfg),
                tools=tools if v != "base" else None,
                memory=memory if v == "ft_fm" else None,
                scorer=num_scorer,
            )
    for journal in tmp_path.rglob("journal.sqlite"):
        con = sqlite3.connect(journal)
        used |= {r[0] for r in con.execute("SELECT DISTINCT call_type FROM calls")}
        con.close()
    assert {"qa_solve", "bank_summarize"} <= used
    assert used <= set(CALL_TYPES), sorted(used - set(CALL_TYPES))
