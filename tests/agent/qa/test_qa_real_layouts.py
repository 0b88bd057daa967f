"""The released files as they really are, one point each, on small files written here in the real
layout:

- FinTMMBench's ``data/News.json`` carries ``Symbol`` as a JSON list (the FinAcumen authors'
  lookup tool, ``ft/tool/financial_data_lookup.py`` at 16246593, indexes it as one; some dumps
  hold the list written out as text, ``"['AMD']"``); ``StockPrice.json`` and
  ``FinancialTable.json`` carry a plain string.
- FinTMMBench's ``QA.json`` records carry ``uuid``, ``type`` and, in their answers' ``source``,
  row uuids and ``Chart_<TICKER>_<PERIOD>_Kline`` charts (the authors' adapter,
  ``ft/dataset/adapters.py``, reads all three; it attaches the charts of a ``Chart`` question).
- A repeated id: the authors' harness runs and counts every row of a file.
- FinMME rows carry ``id`` (the authors' adapter names items ``finmme-<id>``); the official
  ``eval.py`` (luo-junyu/FinMME @ 702cb3a) adds options to the prompt only ``if options:`` and
  scores a choice item's letters either way.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from agent.qa.core.items import Gold, with_gold_evidence
from agent.qa.data.datasets import load_items
from agent.qa.scoring.scoring import score_answer
from agent.qa.solver.gate import Evidence, check_answer
from agent.qa.solver.react import QASolver, SolverConfig
from agent.qa.tools.corpus import Corpus, RetrieveTool
from serving.chat.lockstep import run_one
from serving.chat.scripted import Rule, ScriptedBackend


def _png() -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 40, 40)).save(buf, format="PNG")
    return buf.getvalue()


def _fintmm(root: Path, questions: list[dict]) -> Path:
    data = root / "data"
    (data / "Chart").mkdir(parents=True)
    (data / "Chart" / "AMD_2022-W10_Kline.png").write_bytes(_png())
    (data / "Chart" / "INTC_2022-M3_Kline.png").write_bytes(_png())
    news = [
        {"uuid": "n-1", "Company": ["Advanced Micro Devices Inc", "Intel Corp"], "Date": "2022-03-08",
         "Symbol": ["AMD", "INTC"], "type": "News",
         "Title": "Chipmakers rally as supply eases", "Content": "Shares of both chipmakers rose."},
        {"uuid": "n-2", "Company": "NVIDIA Corp", "Date": "2022-03-09", "Symbol": "['NVDA']",
         "type": "News", "Title": "NVIDIA unveils data-centre GPU", "Content": "A new GPU line."},
        {"uuid": "n-3", "Company": "Apple Inc", "Date": "2022-03-09", "Symbol": ["AAPL"],
         "type": "News", "Title": "Apple event draws crowds", "Content": "New products shown."},
    ]  # fmt: skip
    prices = [
        {"uuid": "sp-1", "Company": "Advanced Micro Devices Inc", "Symbol": "AMD", "Date": "2022-03-08",
         "Interval": "Date", "indicator_name": "closePrice", "indicator_value": 108.3, "unit": "USD"},
    ]  # fmt: skip
    (data / "News.json").write_text(json.dumps(news), encoding="utf-8")
    (data / "StockPrice.json").write_text(json.dumps(prices), encoding="utf-8")
    (data / "FinancialTable.json").write_text("[]", encoding="utf-8")
    (root / "QA.json").write_text(json.dumps(questions), encoding="utf-8")
    return root


def _q(uuid: str, kind: str, question: str, answer: str, sources: list[str]) -> dict:
    return {
        "uuid": uuid,
        "type": kind,
        "question": question,
        "answers": [{"answer": answer, "explanation": "...", "confidence": 0.9, "source": sources}],
    }


_QUESTIONS = [
    _q("q-price", "StockPrice", "What was AMD's closing price on 2022-03-08?", "108.3 USD", ["sp-1"]),
    _q("q-chart", "Chart", "Was AMD's week 10 of 2022 bullish?", "Yes", ["Chart_AMD_2022-W10_Kline"]),
    _q("q-news", "News", "Did Intel's news lean positive?", "Yes", ["n-1", "Chart_INTC_2022-M3_Kline"]),
]


def test_the_retrieve_tool_finds_a_news_row_by_one_of_its_symbols(tmp_path):
    tool = RetrieveTool(Corpus.load(_fintmm(tmp_path / "FinTMMBench", _QUESTIONS)))
    for symbol in ("INTC", "amd"):  # either ticker of the row's list, any case
        r = tool({"query": "chipmakers rally", "symbol": symbol, "kind": "news"})
        assert r.ok and r.text.startswith("1 of 1 matching"), (symbol, r.text)
        assert "news 2022-03-08 AMD,INTC (uuid n-1)" in r.text
    r = tool({"query": "GPU", "symbol": "NVDA", "kind": "news"})  # the list written out as text
    assert "news 2022-03-09 NVDA (uuid n-2)" in r.text
    r = tool({"query": "closing price", "symbol": "AMD", "kind": "price"})  # a plain string
    assert "price 2022-03-08 AMD (uuid sp-1)" in r.text
    r = tool({"query": "chipmakers rally", "symbol": "AAPL", "kind": "news"})
    assert "(uuid n-1)" not in r.text and "(uuid n-3)" in r.text


def test_qa_json_uuid_type_and_chart_sources_reach_the_item(tmp_path):
    root = _fintmm(tmp_path / "FinTMMBench", _QUESTIONS)
    price, chart, news = load_items("fintmmbench", root).items
    assert [i.item_id for i in (price, chart, news)] == ["q-price", "q-chart", "q-news"]
    assert (chart.gold.extra["uuid"], chart.gold.extra["type"]) == ("q-chart", "Chart")
    chart_png = str(root / "data" / "Chart" / "AMD_2022-W10_Kline.png")
    # the cited chart of a Chart question is on the item, on the gold side (no image in the question)
    assert chart.gold.extra["evidence_images"] == (chart_png,) and chart.question.images == ()
    # as the authors' adapter: a chart cited by a question of another type is not attached
    assert news.gold.extra["evidence_images"] == () and price.gold.extra["evidence_images"] == ()
    shown = with_gold_evidence(chart)
    assert shown.question.images == (chart_png,) and shown.gold is chart.gold
    assert with_gold_evidence(price) is price  # no evidence without the corpus rows read
    oracle = {i.item_id: i for i in load_items("fintmmbench", root, oracle_context=True).items}
    assert "108.3" in oracle["q-price"].question.context
    assert oracle["q-price"].gold.extra["evidence_context"] == oracle["q-price"].question.context
    assert "Chipmakers rally" in oracle["q-news"].question.context
    assert oracle["q-chart"].question.images == (chart_png,)
    # a vision model gets the chart in the variants that show images
    backend = ScriptedBackend([Rule("qa_base", "Answer: Yes")])
    solver = QASolver(SolverConfig(model="m", send_images=True, max_images=2))
    traj = run_one(solver.solve_base(shown.question), backend)
    assert traj.answer == "Yes"
    (user,) = [m for m in backend.calls[0].messages if m.role == "user"]
    assert len(user.images) == 1 and user.images[0].startswith("data:image/png;base64,")


def test_a_repeated_uuid_keeps_every_row_as_the_authors_harness_runs_them(tmp_path):
    again = _q("q-price", "StockPrice", "What was AMD's close on 2022-03-08, in dollars?", "108.3", ["sp-1"])
    root = _fintmm(tmp_path / "FinTMMBench", [*_QUESTIONS, again, again])
    out = load_items("fintmmbench", root)
    assert [i.item_id for i in out.items] == ["q-price", "q-chart", "q-news", "q-price#2", "q-price#3"]
    assert out.renamed == (("q-price", "q-price#2"), ("q-price", "q-price#3"))
    assert out.items[3].gold.answer == "108.3" and out.items[3].gold.extra["uuid"] == "q-price"


def _finmme(root: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = {"unit": "", "tolerance": None, "verified_caption": "Quarterly revenue", "related_sentences": "",
            "knowledge_domain": "TMT", "image": {"bytes": _png(), "path": "a.png"}}  # fmt: skip
    rows = [
        base | {"id": 501, "question_text": "Which quarter had the highest revenue? A. Q1 B. Q2 C. Q3",
                "question_type": "single_choice", "answer": "B", "options": ""},
        base | {"id": 502, "question_text": "Which quarters grew?", "question_type": "multiple_choice",
                "answer": "A,C", "options": None},
        base | {"id": 503, "question_text": "Which quarter fell?", "question_type": "single_choice",
                "answer": "C", "options": "A. Q1\nB. Q2\nC. Q3"},
    ]  # fmt: skip
    (root / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), root / "data" / "train-00000-of-00001.parquet")
    return root


def test_finmme_rows_keep_their_id_and_choice_items_without_options(tmp_path):
    out = load_items("finmme", _finmme(tmp_path / "FinMME"), image_cache=tmp_path / "cache")
    assert out.skipped == () and [i.item_id for i in out.items] == ["finmme-501", "finmme-502", "finmme-503"]
    single, multi, listed = out.items
    assert single.question.options == () and multi.question.options == ()
    assert listed.question.options == ("A. Q1", "B. Q2", "C. Q3")
    assert single.gold.answer == "B" and multi.gold.answer == "AC"
    assert single.question.answer_format == listed.question.answer_format  # the option letters
    # the gate takes option letters for them, and the scorer reads them as for any choice item
    ev = Evidence.build(multi.question, (), [])
    assert check_answer(multi.question, "A, C", ev).ok
    assert not check_answer(multi.question, "42", ev).ok
    assert score_answer("finmme", multi.gold, "A, C").correct
    assert not score_answer("finmme", single.gold, "A").correct
    assert isinstance(multi.gold, Gold) and multi.gold.extra["dimensions"][1] == "multi"
