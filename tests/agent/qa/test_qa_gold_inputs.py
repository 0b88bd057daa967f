"""Inputs read from the gold at test time (the authors' released protocol): the format
instructions of their ``build_instruction`` rules, and FinTMMBench's evidence cited by the gold
annotation, on a small hand-written corpus in the released layout (``data/News.json`` rows carry
``Symbol`` as a list)."""

from __future__ import annotations

import json

import pytest

from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.data.gold_inputs import GoldInputs, format_hints, gold_text, with_gold_inputs
from localfin.errors import ConfigError


@pytest.mark.parametrize(
    ("gold", "first"),
    [
        ("yes", "Answer true or false (or yes or no)."),
        ("FALSE", "Answer true or false (or yes or no)."),
        ("B", "Answer with the option letter only (for example A)."),
        ("ACD", "Answer with the option letters only (for example AB)."),
        ("Palo Alto Networks", "Answer with the entity's name (for example a company's)."),
        ("The revenue rose from 4.2 billion to 5.1 billion USD", "Answer with a sentence"),
        ("17", "Answer with a count."),
        ("$1,234.5 million", "Give the answer in dollars ($)."),
        ("HK$3.2", "Give the answer in Hong Kong dollars (HK$)."),
        ("45%", "Give the answer as a percentage, with a % sign."),
        ("-12 bps", "Give the answer in basis points (for example 50 bps)."),
    ],
)
def test_the_first_rule_that_fits_the_gold_answer_decides(gold: str, first: str) -> None:
    assert format_hints(gold)[0].startswith(first)


def test_the_rounding_instruction_shows_the_gold_number_itself_unless_asked_not_to() -> None:
    """The released code's example is the gold answer written to its decimals: a leak of the value,
    kept under "authors" and dropped under "format"."""
    hints = format_hints("$1,234.50 million")
    assert "Give the answer in millions." in hints
    assert "Round the answer to 2 decimal places (for example 1234.50)." in hints
    bare = format_hints("$1,234.50 million", example=False)
    assert "Round the answer to 2 decimal places." in bare and not any("1234" in h for h in bare)
    assert "Give the answer as a whole number." in format_hints("45%")
    assert "Answer as text." in format_hints("4.2 billions")  # the magnitude rule leaves an "s"


def test_gold_text_writes_floats_to_six_significant_digits() -> None:
    assert gold_text(Gold(12.3456789)) == "12.3457" and gold_text(Gold(3)) == "3"
    assert gold_text(Gold(["a", "b"], "multi-span")) == "a, b"
    assert gold_text(Gold(5.0, extra={"answer_text": "5.00"})) == "5.00"


def _fintmm(tmp_path):
    """A corpus in the released layout (rows keyed by ``uuid``; one file spelling it ``UUID``)."""
    data = tmp_path / "fintmm" / "data"
    (data / "Chart").mkdir(parents=True)
    (data / "Chart" / "AMD_2022-W10_Kline.png").write_bytes(b"\x89PNG fake")
    news = [{"uuid": "n1", "Company": "AMD", "Symbol": ["AMD", "NVDA"], "Date": "2022-03-08",
             "content": "AMD shares rose after the launch."}]  # fmt: skip
    table = [{"UUID": "t1", "Company": "AMD", "Symbol": "AMD", "Date": "2022-03-31",
              "indicator_name": "revenue", "indicator_value": "5887000000", "unit": "USD"}]  # fmt: skip
    (data / "News.json").write_text(json.dumps(news), encoding="utf-8")
    (data / "FinancialTable.json").write_text(json.dumps(table), encoding="utf-8")
    return tmp_path / "fintmm"


def _item(kind: str, sources: list[str], item_id: str = "q1") -> QAItem:
    q = Question(item_id, "fintmmbench", "What was AMD's revenue?")
    return QAItem(q, Gold("5887000000 USD", "free", extra={"sources": sources, "type": kind}))


def test_authors_evidence_is_the_adapters_lines_and_the_charts_of_chart_questions(tmp_path) -> None:
    folder = _fintmm(tmp_path)
    cfg = GoldInputs(evidence="authors", corpus=folder)
    sources = ["t1", "n1", "Chart_AMD_2022-W10_Kline"]
    (plain,) = with_gold_inputs([_item("Table", sources)], cfg)
    lines = plain.question.context.splitlines()
    assert lines == ["AMD (AMD) 2022-03-31: revenue=5887000000 USD", "AMD (AMD, NVDA) 2022-03-08: ="]
    assert plain.question.images == ()  # charts only for chart questions
    assert plain.question.from_gold == ("evidence:authors",)
    (chart,) = with_gold_inputs([_item("Chart", sources)], cfg)
    assert [p.split("/")[-1] for p in chart.question.images] == ["AMD_2022-W10_Kline.png"]


def test_full_evidence_keeps_every_field_and_every_cited_chart(tmp_path) -> None:
    folder = _fintmm(tmp_path)
    (it,) = with_gold_inputs(
        [_item("Table", ["n1", "Chart_AMD_2022-W10_Kline"])], GoldInputs(evidence="full", corpus=folder)
    )
    assert "content: AMD shares rose after the launch." in it.question.context
    assert "Symbol: AMD, NVDA" in it.question.context and len(it.question.images) == 1


def test_hints_go_on_every_item_and_are_named_and_nothing_changes_without_gold_inputs(tmp_path) -> None:
    items = [_item("Table", ["t1"])]
    assert with_gold_inputs(items, GoldInputs()) == items
    (it,) = with_gold_inputs(items, GoldInputs(format_hints="authors"))
    assert it.question.instructions == format_hints("5887000000 USD")
    assert it.question.instructions[0] == "Answer as text."  # "USD" after the number: not a number
    assert it.question.from_gold == ("format_hints:authors",) and it.gold == items[0].gold
    with pytest.raises(ConfigError, match="gold_evidence needs the FinTMMBench folder"):
        with_gold_inputs(items, GoldInputs(evidence="authors"))
    with pytest.raises(ConfigError, match=r"gold_format_hints='x'; allowed: none, format, authors"):
        GoldInputs(format_hints="x")
