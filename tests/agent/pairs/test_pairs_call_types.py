"""Moira and FinMem own their call-type labels: every call an experiment journals carries one
the agent declares (serving accepts any label and lists none)."""

from __future__ import annotations

import sqlite3

from moira_support import scripted, small_config, small_store, with_finmem

from agent.pairs.baselines.finmem.calls import CALL_TYPES as FINMEM_CALLS
from agent.pairs.experiment.run import run_experiment
from agent.pairs.moira.config import CALL_KINDS
from bank.embedder import HashingEmbedder


def test_every_journaled_call_type_is_declared_by_its_agent(tmp_path):
    cfg, text = small_config(small_store(), baselines={"methods": ["finmem"]})
    run_experiment(
        cfg,
        tmp_path / "x",
        config_text=text,
        backend=with_finmem(scripted()),
        embedder=HashingEmbedder(dim=64),
    )
    con = sqlite3.connect(tmp_path / "x" / "journal.sqlite")
    used = {r[0] for r in con.execute("SELECT DISTINCT call_type FROM calls")}
    con.close()
    assert {"pair_selection", "direction", "finmem_decision"} <= used
    assert used <= set(CALL_KINDS) | set(FINMEM_CALLS), sorted(used - set(CALL_KINDS) - set(FINMEM_CALLS))
