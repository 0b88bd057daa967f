"""Company descriptions without financial results (paper A.1; ``[prompt] description_filter``),
on the real S&P 500 companies file as the importer reads it: what the rule takes out there,
what it keeps, and that the prompts show the filtered text."""

from __future__ import annotations

import pytest

from agent.data.loaders import load_companies
from agent.data.schema import Company
from agent.pairs.market.descriptions import filter_description, split_sentences, states_financial_result
from agent.pairs.market.masking import StepCalendar
from agent.pairs.moira.config import PromptConfig
from agent.pairs.moira.payloads import company_lines
from localfin.errors import ConfigError


@pytest.fixture(scope="module")
def companies(shared_data):
    frame = load_companies(shared_data / "companies.csv").frame
    return dict(zip(frame["ticker"], frame["description"]))


def test_the_rule_on_the_real_companies_file(companies):
    removed = {}
    for t, text in companies.items():
        kept, out = filter_description(text, "financial_results")
        if out:
            removed[t] = out
        # what is kept is the description less the removed sentences, never empty when it was not
        assert (kept == text) == (not out)
        assert not text or kept
    # the financial results of the file: a market capitalization, net sales, a dividend record
    assert sorted(removed) == ["ARE", "FRT", "O", "SBAC", "WY"]
    assert removed["WY"] == (
        "In 2022, we generated $10.2 billion in net sales and employed approximately 9,200 people "
        "who serve customers worldwide.",
    )
    assert removed["ARE"][0].startswith("Alexandria has a total market capitalization of $33.1 billion")
    assert removed["SBAC"] == (
        "Our organization is part of the S&P 500 and is one of the top Real Estate Investment Trusts "
        "(REITs) by market capitalization.",
    )
    assert (
        "56 consecutive years" in removed["FRT"][0] and "644 consecutive monthly dividends" in removed["O"][0]
    )
    # one sentence each, the business around it kept
    assert all(len(v) == 1 for v in removed.values())
    assert "REIT" in filter_description(companies["O"], "financial_results")[0]


@pytest.mark.parametrize(
    ("ticker", "sentence"),
    [
        ("AWK", "serving approximately 3.5 million active customers"),  # the business's size
        ("AAL", "It operates a mainline fleet of 965 aircraft."),
        ("DLTR", "at the fixed price of $ 1.25"),  # a price, not a result
        ("BX", "between $0.25 million and $900 million per transaction"),  # a mandate
        ("CBRE", "market value appraisals"),  # a service
        ("AAPL", "Apple Inc. was founded in 1976"),  # a sentence on an abbreviation stays whole
    ],
)
def test_business_figures_are_kept(companies, ticker, sentence):
    assert sentence in companies[ticker]
    assert sentence in filter_description(companies[ticker], "financial_results")[0]


def test_sentences_split_at_sentence_ends_only():
    text = "Apple Inc. was founded in 1976. It is based in Cupertino, California. 3 segments report."
    assert split_sentences(text) == [
        "Apple Inc. was founded in 1976.",
        "It is based in Cupertino, California.",
        "3 segments report.",
    ]
    assert states_financial_result("Revenue grew 12% in the year.")
    assert not states_financial_result("It reports revenue by segment.")  # no figure


def test_the_prompts_show_the_filtered_description_and_none_keeps_it(companies):
    wy = Company("WY", "Weyerhaeuser Company", "Real Estate", companies["WY"])
    cal = StepCalendar.from_sessions(["2025-01-02"])
    paper = company_lines(["WY"], {"WY": wy}, PromptConfig(description_max_chars=5000), cal)[0]
    assert "net sales" not in paper and "timberlands" in paper.lower()
    raw = PromptConfig(description_max_chars=5000, description_filter="none")
    assert "net sales" in company_lines(["WY"], {"WY": wy}, raw, cal)[0]
    with pytest.raises(
        ConfigError, match=r"prompt\.description_filter='all'; allowed: financial_results, none"
    ):
        PromptConfig(description_filter="all")
