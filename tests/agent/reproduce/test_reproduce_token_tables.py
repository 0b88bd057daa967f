"""Tables 9 and 10 of the Moira paper computed as the paper computes them from a reproduction
cell's ``summary.json`` and trace, and the fallbacks table of ``reproduction.md``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.pairs.moira.trace import TraceLog
from agent.reproduce.moira.run import MoiraOutcome, moira_fallback_rows
from agent.reproduce.moira.token_tables import PAPER_MOIRA_A1_TOKENS, table9_rows, table10_rows
from serving.chat.types import ChatResult, Usage


def _tokens(calls: int, prompt: int, completion: int) -> dict[str, int]:
    return {"calls": calls, "prompt_tokens": prompt, "completion_tokens": completion}


def _result(call_type: str, prompt: int, completion: int, key: str) -> ChatResult:
    return ChatResult(
        "{}", None, {}, None, "stop", Usage(prompt, completion), 0.0, "t", "m", "r", call_type, key
    )


@pytest.fixture
def cell(tmp_path: Path) -> Path:
    """A cell of 46 finalized test steps (two complete 23-step cycles)."""
    cell = tmp_path / "matrix" / "q32-nothink" / "a1-long"
    run = "full-beta-s0"
    trace = TraceLog(run)
    for k, (p, c) in enumerate([(1000, 40), (1400, 10), (1200, 90)]):
        trace.add(phase="test", round=0, step=k + 1, date="", kind="direction", pair="A/B",
                  result=_result("direction", p, c, f"d{k}"))  # fmt: skip
    trace.add(phase="train", round=1, step=0, date="", kind="reflection", pair="",
              result=_result("reflection", 3000, 500, "r"))  # fmt: skip
    trace.write(cell / "runs" / run / "trace.parquet")
    moira = {
        "run_id": run,
        "metrics": {"n_transitions": 46},
        "extra": {
            "test": {
                "tokens_by_call_type": {
                    "direction": _tokens(46, 46_000, 2_000),
                    "break_check": _tokens(2, 2_400, 100),
                },
                "fallbacks_by_call_type": {"direction": 3},
                "fallback_kinds_by_call_type": {"direction": {"no_json": 2, "cut": 1}},
            },
            "train": {"tokens_by_call_type": {"reflection": _tokens(2, 6_000, 1_000)}},
        },
    }
    # FinMem's tokens grow with its memory: 100 a step in cycle 1, 300 in cycle 2
    finmem = {
        "run_id": "finmem-beta-seed0",
        "metrics": {"n_transitions": 46},
        "extra": {
            "config": {"model": "qwen3-32b-nothink"},
            "tokens_by_phase": {"test": {"finmem_decision": _tokens(46, 8_000, 1_200)}},
            "test_tokens_by_step": [100] * 23 + [300] * 23 + [50],
        },
    }
    doc = {"decoding": "prompt", "runs": [moira], "baselines": [finmem]}
    doc["fallbacks_by_call_type"] = {
        "direction": {
            "train": {"calls": 30, "fallbacks": 0, "kinds": {}},
            "test": {"calls": 46, "fallbacks": 3, "kinds": {"no_json": 2, "cut": 1}},
        }
    }
    (cell / "summary.json").write_text(json.dumps(doc), encoding="utf-8")
    return cell


def test_table9_gives_input_output_and_total_ranges_each_on_its_own(cell: Path) -> None:
    rows = {r["call_type"]: r for r in table9_rows([cell])}
    d = rows["direction"]
    assert (d["calls"], d["input_tokens"], d["output_tokens"]) == (3, "1000..1400", "10..90")
    # the total range is not input range + output range: 1,040 / 1,410 / 1,290
    assert d["total_tokens"] == "1040..1410"
    assert rows["reflection"]["total_tokens"] == "3500..3500" and d["backbone"] == "q32-nothink"


def test_table10_moira_by_its_formula_finmem_by_its_first_complete_cycles(cell: Path) -> None:
    [row] = table10_rows([cell])
    assert row["moira_test"] == 46_000 + 2_000 + 2_400 + 100
    assert row["moira_training_plus_test"] == row["moira_test"] + 7_000
    assert row["moira_per_cycle"] == round(50_500 / 46 * 23)
    assert row["finmem_test"] == 9_200 and row["finmem_model"] == "qwen3-32b-nothink"
    # (23 x 100 + 23 x 300) / 2 cycles; the session after the last complete cycle is left out
    assert row["finmem_per_cycle"] == 4_600 and row["finmem_cycles_averaged"] == 2
    assert row["ratio_full_test"] == pytest.approx(50_500 / 9_200, abs=1e-3)
    assert row["ratio_per_cycle"] == pytest.approx(25_250 / 4_600, abs=1e-3)
    assert row["paper_moira_a1_training_plus_test"] == PAPER_MOIRA_A1_TOKENS
    assert row["paper_ratio_full_test"] == 0.25


def test_the_fallbacks_table_of_the_report(cell: Path) -> None:
    out = MoiraOutcome(cell.parent.parent, (cell,), "matrix", ())
    [row] = moira_fallback_rows(out)
    assert row == {
        "backbone": "q32-nothink",
        "windows": "a1-long",
        "decoding": "prompt",
        "call_type": "direction",
        "train_calls": 30,
        "train_fallbacks": 0,
        "test_calls": 46,
        "test_fallbacks": 3,
        "kinds": "cut 1, no_json 2",
    }
