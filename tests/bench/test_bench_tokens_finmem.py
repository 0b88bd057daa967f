"""``localfin bench tokens`` with FinMem's filings: a prompt longer than the CPU model's context is
answered from a copy cut to fit while the prompt as built is what the run records; windows are cut
at the data's end; FinMem's context comes from its backbone's entry; FinMem's fixed prompt text,
ours beside FinMem's own (read from its code where present)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.tokens.fit import FitToContext, shrink
from bench.tokens.prompts import clip_windows, cut_windows, finmem_context
from bench.tokens.scaffolding import ours, scaffolding_counts, theirs
from localfin.errors import ConfigError
from serving.chat.scripted import Rule, ScriptedBackend
from serving.chat.types import ChatRequest, Message

FINMEM = Path(__file__).resolve().parents[2].parent / "shared" / "vendor"
FINMEM = FINMEM / "FinMem-LLM-StockTrading-be814aa47970de9bf2fdd6a1d5a60ae5cf361b46"


def _request(n: int) -> ChatRequest:
    payload = {"memory": {"mid": [{"id": 1, "text": "x" * n}, {"id": 2, "text": "y" * (n // 2)}]}}
    return ChatRequest(
        model="m",
        messages=(Message("system", "rules"), Message("user", json.dumps(payload))),
        max_tokens=10,
        json_schema={"type": "object"},
        call_type="finmem_decision",
    )


def _chars(req: ChatRequest) -> int:
    return sum(len(m.content) for m in req.messages)


def test_a_long_prompt_is_answered_from_a_copy_and_keeps_its_key() -> None:
    big = _request(5_000)
    small = shrink(big, _chars, 2_000)
    assert small is not None and _chars(small) + small.max_tokens <= 2_000
    texts = [i["text"] for i in json.loads(small.messages[1].content)["memory"]["mid"]]
    assert all(t.endswith("...") or len(t) < 2_500 for t in texts)
    inner = ScriptedBackend([Rule("finmem_decision", lambda r: "{}")])
    fit = FitToContext(inner, _chars, 2_000)
    fits = _request(100)
    res = fit.chat([big, fits])
    assert [r.request_key for r in res] == [big.key(), fits.key()]  # answered under its own key
    assert _chars(inner.calls[0]) <= 2_000 and inner.calls[1] == fits and fit.cut == 1


def test_a_prompt_whose_fixed_text_exceeds_the_fit_is_sent_whole_counted_and_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = _request(5_000)
    inner = ScriptedBackend([Rule("finmem_decision", lambda r: "{}")])
    fit = FitToContext(inner, _chars, 40)  # below the system text and reply budget
    with caplog.at_level("WARNING", logger="bench.tokens.fit"):
        fit.chat([big, big])
    assert fit.unfit == 2 and fit.cut == 0 and inner.calls[0] == big
    assert sum("--fit-tokens 40" in r.getMessage() for r in caplog.records) == 1


def test_windows_end_at_the_data_and_finmem_takes_its_backbones_context() -> None:
    doc = {
        "windows": [{"name": "a1-long", "test_start": "2025-01-14", "test_end": "2026-03-31"}],
        "backbones": [{"key": "llama-3.1-8b", "name": "l8", "max_model_len": 131072}],
        "baselines": {"finmem": {"model": "llama-3.1-8b"}},
    }
    assert finmem_context(doc) == 131072
    notes = clip_windows(doc, "2025-10-24")
    assert doc["windows"][0]["test_end"] == "2025-10-24" and "2026-03-31" in notes[0]


def test_finmem_fixed_prompt_text_ours_and_theirs() -> None:
    from bench.tokens.count import open_counter

    pytest.importorskip("quicktok")
    mine = ours()
    for part in ("Reading the news.", "Momentum.", "Output format.", '"mid_memory_ids"'):
        assert part in mine
    counter = open_counter("pypi:qwen3")
    if not FINMEM.is_dir():
        got = scaffolding_counts({"q": counter}, None)
        assert got["q"]["ours"] > 500 and "finmem" not in got["q"]
        pytest.skip(f"FinMem's code not found at {FINMEM}")
    text = theirs(FINMEM)
    assert "momentum" in text.lower() and "short-level memory" in text
    got = scaffolding_counts({"q": counter}, FINMEM)["q"]
    # comparable length: ours within a factor of two of FinMem's own strings
    assert 0.5 < got["ours"] / got["finmem"] < 2.0


def test_stand_in_filings_fill_only_the_reports_a_file_lacks(tmp_path: Path) -> None:
    import datetime as dt

    import pandas as pd

    from agent.data.filings_text import FilingCompany, herculean_frame, synthetic_filings
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from bench.tokens.prompts import stand_in_filings_file

    days = pd.bdate_range("2023-01-02", "2024-12-31")
    rows = [{"date": d.date().isoformat(), "ticker": t, "close": 10.0} for d in days for t in ("AAA", "BBB")]
    pd.DataFrame(rows).to_csv(tmp_path / "p.csv", index=False)
    real = synthetic_filings(
        [FilingCompany("AAA", "A Corp", "Energy")], dt.date(2024, 1, 1), dt.date(2024, 12, 31), seed=99
    )
    real = real[real.document_type == "10-K"]
    herculean_frame(real).to_parquet(tmp_path / "real.parquet", index=False)
    with MarketStore(tmp_path / "s.sqlite") as s:
        import_files(s, prices=[tmp_path / "p.csv"], filings=[tmp_path / "real.parquet"])
        path = stand_in_filings_file(s, ["AAA", "BBB"], tmp_path / "stand_in.parquet")
    gen = pd.read_parquet(path)
    k_real = dt.date.fromisoformat(real.iloc[0]["date"])
    aaa_k = gen[(gen.symbol == "AAA") & (gen.document_type == "10-K")]
    assert all(abs((d.date() - k_real).days) > 330 for d in aaa_k["date"])  # the real one stands
    assert (gen.symbol == "BBB").sum() >= 6 and set(gen.document_type) == {"10-K", "10-Q"}


def test_cut_windows_keeps_the_last_training_sessions_and_whole_test_cycles() -> None:
    sessions = [f"2025-01-{d:02d}" for d in range(1, 32)] + [f"2025-02-{d:02d}" for d in range(1, 29)]
    doc = {
        "lifecycle": {"validation_period": 5},
        "windows": [
            {
                "name": "w",
                "train_start": "2025-01-01",
                "train_end": "2025-01-09",
                "test_start": "2025-01-10",
                "test_end": "2025-02-28",
            }
        ],
    }
    notes = cut_windows(doc, sessions, train_sessions=3, test_cycles=2)
    w = doc["windows"][0]
    assert (w["train_start"], w["train_end"]) == ("2025-01-07", "2025-01-09")
    # two cycles of 5 steps: 11 sessions from the test start
    assert (w["test_start"], w["test_end"]) == ("2025-01-10", "2025-01-20") and len(notes) == 2
    with pytest.raises(ConfigError, match=r"--test-cycles 20.*allowed: 1\.\.9"):
        cut_windows(doc, sessions, test_cycles=20)
    with pytest.raises(ConfigError, match=r"--train-sessions 12.*allowed: 1\.\.9"):
        cut_windows(doc, sessions, train_sessions=12)
