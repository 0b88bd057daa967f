"""FinTMMBench's Grounded Data Retrieval: the ``retrieve`` tool over a small corpus in the
benchmark's released layout (QA.json + data/ with StockPrice, FinancialTable, News and Chart/)
finds each question's evidence (the gold annotation's sources, read only by the test) from the
question alone, the same way every time; charts go back as images for a model that takes them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent.qa.core.items import Question
from agent.qa.data.datasets import load_items
from agent.qa.solver.react import QASolver, SolverConfig
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from agent.qa.tools.corpus import Corpus, RetrieveTool
from localfin.errors import InputError
from serving.chat.lockstep import run_one
from serving.chat.scripted import Rule, ScriptedBackend

_PNG = (
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15"
    b"\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00"
    b"\x00IEND\xaeB`\x82"
)


def _prices() -> list[dict]:
    rows = []
    for sym, company, base in (("AAPL", "Apple Inc.", 150.0), ("MSFT", "Microsoft Corp", 280.0)):
        for day, dv in (("2022-03-04", 0.0), ("2022-03-07", 2.5), ("2022-03-08", -1.0)):
            for name, v in (("Close", base + dv), ("Volume", 9e7 + 1e6 * dv)):
                rows.append(
                    {"Company": company, "Symbol": sym, "Date": day, "Interval": "Date",
                     "indicator_name": name, "indicator_value": v,
                     "unit": "USD" if name == "Close" else "shares",
                     "UUID": f"p-{sym}-{day}-{name}", "SourceType": "StockPrice"}
                )  # fmt: skip
    return rows


def _tables() -> list[dict]:
    return [
        {"Company": "Apple Inc.", "Symbol": "AAPL", "Date": "2022-03-31", "Interval": "Quarter",
         "indicator_name": "totalRevenue", "indicator_value": 97278000000, "unit": "USD",
         "UUID": "t-AAPL-2022Q1-rev", "SourceType": "FinancialTable"},
        {"Company": "Microsoft Corp", "Symbol": "MSFT", "Date": "2022-03-31", "Interval": "Quarter",
         "indicator_name": "totalRevenue", "indicator_value": 49360000000, "unit": "USD",
         "UUID": "t-MSFT-2022Q1-rev", "SourceType": "FinancialTable"},
        {"Company": "Apple Inc.", "Symbol": "AAPL", "Date": "2022-03-31", "Interval": "Quarter",
         "indicator_name": "netIncome", "indicator_value": 25010000000, "unit": "USD",
         "UUID": "t-AAPL-2022Q1-ni", "SourceType": "FinancialTable"},
    ]  # fmt: skip


def _news() -> list[dict]:
    return [
        {"Company": "Apple Inc.", "Aspect": "supply chain", "Date": "2022-03-09", "Sentiment": "Negative",
         "Title": "Apple cuts iPhone SE output after weak demand", "UUID": "n-apple-se"},
        {"Company": "Microsoft Corp", "Aspect": "cloud", "Date": "2022-03-10", "Sentiment": "Positive",
         "Title": "Microsoft Azure wins large government contract", "UUID": "n-msft-azure"},
    ]  # fmt: skip


def _benchmark(root: Path) -> Path:
    data = root / "data"
    (data / "Chart").mkdir(parents=True)
    (data / "StockPrice.json").write_text(json.dumps(_prices()), encoding="utf-8")
    (data / "FinancialTable.json").write_text(json.dumps(_tables()), encoding="utf-8")
    (data / "News.json").write_text(json.dumps(_news()), encoding="utf-8")
    for stem in ("AAPL_2022-W10_Kline", "MSFT_2022-W10_Kline", "AAPL_2022-M3_Kline"):
        (data / "Chart" / f"{stem}.png").write_bytes(_PNG)
    qa = {"questions": [
        {"uuid": "q1", "question": "What was Apple Inc.'s totalRevenue in Q1 2022?",
         "answers": [{"answer": "97.28 billion USD", "source": ["t-AAPL-2022Q1-rev"]}]},
        {"uuid": "q2", "question": "What was the Close price of MSFT on 2022-03-07?",
         "answers": [{"answer": "282.5", "source": ["p-MSFT-2022-03-07-Close"]}]},
        {"uuid": "q3",
         "question": "What was the sentiment of the news about Microsoft Azure's government contract?",
         "answers": [{"answer": "Positive", "source": ["n-msft-azure"]}]},
        {"uuid": "q4", "question": "Describe the weekly candlestick chart trend of AAPL in 2022-W10.",
         "answers": [{"answer": "up", "source": ["Chart_AAPL_2022-W10_Kline"]}]},
    ]}  # fmt: skip
    (root / "QA.json").write_text(json.dumps(qa), encoding="utf-8")
    return root


def test_retrieve_finds_each_items_evidence(tmp_path: Path) -> None:
    root = _benchmark(tmp_path / "fintmm")
    items = load_items("fintmmbench", root).items
    assert all(it.question.context == "" and not it.question.images for it in items)  # closed book
    make = tool_factory(ToolsetConfig(names=("retrieve",), corpus_path=root))
    for it in items:
        (tool,) = make(it.question)
        res = tool({"query": it.question.text, "k": 3})
        assert res.ok, res.text
        again = tool({"query": it.question.text, "k": 3})
        assert again == res  # deterministic
        cited = {s.removeprefix("Chart_") for s in it.gold.extra["sources"]}  # the oracle, for the test only
        found = {line.split("(uuid ")[1].split(")")[0] for line in res.text.splitlines()[1:]}
        assert cited <= found, (it.item_id, res.text)
    chart = make(items[3].question)[0]({"query": "AAPL weekly candlestick 2022-W10", "kind": "chart", "k": 1})
    assert chart.images == (str(root / "data" / "Chart" / "AAPL_2022-W10_Kline.png"),)
    assert "2022-03-07..2022-03-13" in chart.text  # ISO week 10 of 2022


def test_filters_narrow_the_search(tmp_path: Path) -> None:
    corpus = Corpus.load(_benchmark(tmp_path / "fintmm"))
    assert corpus.describe() == "20 documents (price 12, table 3, news 2, chart 3)"
    tool = RetrieveTool(corpus)
    r = tool({"query": "Close price", "symbol": "msft", "start_date": "2022-03-07", "end_date": "2022-03-07",
              "kind": "price", "k": 10})  # fmt: skip
    assert r.ok and r.text.startswith(
        "2 of 2 matching documents:\n[1] price 2022-03-07 MSFT (uuid p-MSFT-2022-03-07-Close)"
    )
    assert 282.5 in r.numbers
    r = tool({"query": "revenue", "symbol": "Apple", "kind": "table"})  # a word of the company name
    assert r.text.startswith("2 of 2 matching") and "MSFT" not in r.text
    monthly = tool({"query": "chart", "kind": "chart", "start_date": "2022-03-20", "end_date": "2022-03-31"})
    assert "AAPL_2022-M3_Kline" in monthly.text and "W10" not in monthly.text
    for bad, why in (
        ({"query": ""}, "query="),
        ({"query": "x", "kind": "video"}, "kind='video'"),
        ({"query": "x", "k": 0}, "k=0"),
        ({"query": "x", "start_date": "03/07/2022"}, "start_date="),
        ({"query": "x", "start_date": "2022-03-08", "end_date": "2022-03-07"}, "is after"),
        ({"query": "x", "where": 1}, "unknown argument"),
    ):
        out = tool(bad)
        assert not out.ok and out.error == "bad_args" and why in out.text, (bad, out.text)


def test_only_fintmmbench_questions_get_retrieve_and_a_missing_corpus_is_an_error(tmp_path: Path) -> None:
    root = _benchmark(tmp_path / "fintmm")
    make = tool_factory(ToolsetConfig(names=("retrieve",), corpus_path=root))
    assert [t.name for t in make(Question("a", "fintmmbench", "What?"))] == ["retrieve"]
    assert make(Question("b", "finmmr", "What?")) == []
    with pytest.raises(InputError, match="no FinTMMBench corpus under"):
        Corpus.load(tmp_path / "empty")


@pytest.mark.parametrize("vision", [True, False])
def test_a_retrieved_chart_goes_to_a_vision_model_as_an_image(tmp_path: Path, vision: bool) -> None:
    root = _benchmark(tmp_path / "fintmm")
    q = load_items("fintmmbench", root).items[3].question
    steps = [
        json.dumps({"thought": "find it", "action": "retrieve",
                    "args": {"query": "AAPL weekly candlestick 2022-W10", "kind": "chart", "k": 2}}),
        json.dumps({"thought": "done", "action": "final_answer", "args": {"answer": "up"}}),
    ]  # fmt: skip

    def reply(req) -> str:
        t = sum(m.role == "assistant" for m in req.messages)
        return json.dumps({"inputs": "a", "experience": "b", "plan": "c"}) if t == 0 else steps[min(t - 1, 1)]

    backend = ScriptedBackend([Rule("qa_solve", reply)])
    make = tool_factory(ToolsetConfig(names=("retrieve",), corpus_path=root))
    solver = QASolver(SolverConfig(model="m", max_steps=3, send_images=vision, max_images=1), tools=make)
    traj = run_one(solver.solve(q), backend)
    assert traj.answer == "up"
    obs = backend.calls[-1].messages[-1]
    if vision:  # two charts found, one attached: the conversation's limit is one image
        assert len(obs.images) == 1 and obs.images[0].startswith("data:image/png;base64,")
        assert "1 image(s) attached in result order; 1 not shown: at most 1 per conversation" in obs.content
    else:
        assert obs.images == () and "2 image(s) not shown: this model takes no images" in obs.content
