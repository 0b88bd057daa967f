"""The number reader: every way a financial answer writes a number, and what is refused."""

from __future__ import annotations

import pytest

from agent.qa.core.answer_format import AnswerFormat, answer_format_from_question, numeric_format
from agent.qa.core.numbers import find_numbers, format_number, parse_number
from localfin.errors import ConfigError


@pytest.mark.parametrize(
    ("text", "value", "scale", "percent"),
    [
        ("1,234.5", 1234.5, "", False),
        ("(12.3)", -12.3, "", False),
        ("($12.3)", -12.3, "", False),
        ("$(12.3)", -12.3, "", False),
        ("12.3%", 12.3, "", True),
        ("12.3 percent", 12.3, "", True),
        ("0.5 per cent", 0.5, "", True),
        ("$4.5 million", 4.5, "million", False),
        ("4.5m", 4.5, "million", False),
        ("4.5 mn", 4.5, "million", False),
        ("US$ 2bn", 2.0, "billion", False),
        ("3k", 3.0, "thousand", False),
        ("-0.2", -0.2, "", False),
        ("−5", -5.0, "", False),
        ("-$12.3", -12.3, "", False),
        ("1.2e6", 1.2e6, "", False),
        ("$  1,452.4", 1452.4, "", False),
        ("approximately 33.33%", 33.33, "", True),
        ("The answer is 42.", 42.0, "", False),
        ("4.5 million dollars", 4.5, "million", False),
        ("25.93亿", 25.93, "yi", False),
        (".5", 0.5, "", False),
        (17, 17.0, "", False),
        (-2.5, -2.5, "", False),
    ],
)
def test_parse_number_reads_financial_notation(text, value, scale, percent):
    n = parse_number(text)
    assert n is not None
    assert n.value == pytest.approx(value)
    assert n.scale == scale
    assert n.percent is percent


@pytest.mark.parametrize(
    "text", ["", "abc", "12 and 13", "12 months", "1,23", "n/a", None, True, float("nan")]
)
def test_parse_number_refuses_what_is_not_one_number(text):
    assert parse_number(text) is None


def test_scaled_applies_the_scale_word():
    assert parse_number("$4.5 million").scaled == pytest.approx(4.5e6)
    assert parse_number("2bn").scaled == pytest.approx(2e9)
    assert parse_number("12.3%").scaled == pytest.approx(12.3)  # percent stays in percent units


def test_find_numbers_in_text_keeps_ranges_and_identifiers_apart():
    found = find_numbers("Sales rose from $1,100.2 million in 2018-2019 to 1,234.5 (up 12.3%); Q4 was (3.1)")
    assert [n.value for n in found] == [1100.2, 2018.0, 2019.0, 1234.5, 12.3, -3.1]
    assert [n.value for n in find_numbers("Cost789.01 | H2 | FY2019")] == [789.01, 2019.0]
    assert found[0].scale == "million"
    assert found[4].percent


def test_format_number():
    assert format_number(3.0) == "3"
    assert format_number(-0.25) == "-0.25"
    assert format_number(2.0, 2) == "2.00"


@pytest.mark.parametrize(
    ("question", "kind", "decimals", "scale"),
    [
        (
            "what was the percentage change from 2007 to 2008? Answer to the nearest integer.",
            "percent",
            0,
            "",
        ),
        ("What was the difference in net profit between both FYs? (in thousand)", "number", None, "thousand"),
        ("what is the ratio of A to B? Answer to three decimal places.", "number", 3, ""),
        ("How many years did net sales exceed $200,000 thousand?", "count", 0, ""),
        ("In how many months did it close above $42.50?", "count", 0, ""),
        ("Is the company profitable in 2019?", "yes_no", None, ""),
        ("Is revenue higher in 2019 or 2018?", "text", None, ""),
        ("What are the contract types?", "list", None, ""),
        ("请计算2014年和2015年的收益总和，并将结果四舍五入到小数点后两位。", "number", 2, ""),
        ("What is the company paid on a cost-plus type contract?", "text", None, ""),
        ("Round to one decimal place: what was total revenue in millions?", "number", 1, "million"),
    ],
)
def test_answer_format_from_question_text(question, kind, decimals, scale):
    fmt = answer_format_from_question(question)
    assert (fmt.kind, fmt.decimals, fmt.scale) == (kind, decimals, scale)
    assert fmt.describe()


def test_answer_format_uses_only_published_per_item_fields():
    fmt = answer_format_from_question("Which option is right?", options=("A. up", "B. down"))
    assert fmt.kind == "choice" and fmt.n_options == 2
    fmt = answer_format_from_question("What is the growth rate?", unit="%")
    assert "in %" in fmt.describe()


def test_answer_format_validates():
    with pytest.raises(ConfigError, match="kind"):
        AnswerFormat("essay")
    with pytest.raises(ConfigError, match="decimals"):
        AnswerFormat("number", decimals=11)


def test_numeric_benchmarks_ask_for_a_number_even_without_a_cue():
    assert answer_format_from_question("Revenue of the firm").kind == "text"
    fmt = numeric_format("Revenue of the firm (in thousands)")
    assert (fmt.kind, fmt.scale) == ("number", "thousand")
    assert numeric_format("What was the percentage change?").kind == "percent"
    assert "in USD" in numeric_format("Revenue of the firm", unit="USD").describe()
