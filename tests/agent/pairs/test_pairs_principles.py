"""The transferable-principle rule: each rule rejects what it should, names itself, and lets
general principles through (``V``: the lenient ``recommendation`` reading; ``STRICT``: A.3 read
strictly, the default)."""

from __future__ import annotations

import pytest

from agent.pairs.moira.principles import RULES, PrincipleValidator

V = PrincipleValidator(
    ["KO", "PEP", "K", "CAG"],
    {"KO": "The Coca-Cola Company", "PEP": "PepsiCo, Inc.", "K": "Kellogg Company", "CAG": "Conagra Brands"},
    max_chars=160,
    direction_rule="recommendation",
)


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("Trade less.", "too_short"),
        ("Wait for the spread to revert before adding exposure " * 5, "too_long"),
        ("Avoid buying KO when the spread is wide.", "ticker"),
        ("Go long K against the other leg when z is low.", "ticker"),
        ("Coca-Cola tends to revert faster than its peer after shocks.", "company"),
        ("Be careful with pepsico after earnings surprises in the sector.", "company"),
        ("Conagra Brands news should make you cautious on the spread.", "company"),
        ("The AAA/BBB spread reverts quickly after large moves.", "pair"),
        ("Treat XYZ-QRS divergences as temporary when news is neutral.", "pair"),
        ("Stay cautious after 2024-03-15 when volatility jumped.", "date"),
        ("Be careful on Mondays because gaps tend to widen spreads.", "date"),
        ("Reduce risk in March when results are reported by both legs.", "date"),
        ("The regime since 2019 favours reversion over divergence trades.", "date"),
        ("After step 12 the spread stopped reverting, so stay flat then.", "step"),
        ("Trades placed around step XXX lost money, avoid similar setups.", "step"),
        ("Always choose LONG_SHORT in every round of trading.", "direction"),
        ("Prefer short-long positions over the other side.", "direction"),
        ("Long short trades worked best; keep using them.", "direction"),
    ],
)
def test_each_rule_rejects_and_names_itself(text, rule):
    assert rule in RULES
    assert V.rule_broken(text) == rule


@pytest.mark.parametrize(
    "text",
    [
        "When the trading-window z-score is above 1.5 and today's move confirms it, trade toward the mean.",
        "Stay FLAT only when the news of the two legs points in opposite directions.",
        "If the last three settled steps show the opposite side winning, reconsider the spread signal.",
        "Keep trading a WARNING pair when the spread is stretched; the state is context only.",
        "Do not take the same side for more than five days in a row without reversion.",
        "Use a P/E gap between the legs only as supporting evidence.",
        "May the spread revert quickly; size is fixed anyway, so wait for clear signals.",
    ],
)
def test_general_principles_pass(text):
    assert V.rule_broken(text) is None, text


def test_duplicates_of_kept_or_earlier_principles_are_rejected():
    p = "When the trading-window z-score is above one, trade toward the mean."
    checks = V.check(
        [p, p.upper().replace("Z-SCORE", "z-score"), "Stay cautious when news conflicts strongly."], keep=()
    )
    assert [c.rule for c in checks] == [None, "duplicate", None]
    checks = V.check([p], keep=[p])
    assert checks[0].rule == "duplicate" and not checks[0].ok


# A.3 forbids a fixed-direction recommendation, not every mention of a direction: a direction
# tied to a condition on what the agent observes is a transferable principle.
CONDITIONAL = (
    "Always choose LONG_SHORT when the spread is below its mean.",
    "Prefer short-long positions when z is above one and rising.",
    "Use long short trades whenever the news is positive for the first leg.",
)


@pytest.mark.parametrize("text", CONDITIONAL)
def test_a_direction_under_a_stated_condition_is_kept_and_rejected_by_the_strict_rule(text):
    assert V.rule_broken(text) is None
    strict = PrincipleValidator(["KO"], {}, max_chars=160, direction_rule="any_mention")
    assert strict.rule_broken(text) == "direction"


def test_a_fixed_recommendation_in_a_second_sentence_is_still_caught():
    text = "Trade toward the mean when the spread is stretched. Otherwise prefer SHORT_LONG."
    assert V.rule_broken(text) == "direction"


def test_no_length_rule_at_max_chars_zero():
    long = "When the trading-window z-score is stretched, trade toward the mean. " * 10
    assert V.rule_broken(long) == "too_long"
    assert PrincipleValidator(["KO"], {}, max_chars=0).rule_broken(long) is None


# A.3 read strictly (direction_rule "any_recommendation", the reproduction configs): "a specific
# LONG_SHORT/SHORT_LONG recommendation" under a condition too, and the ban covers the reflection.
STRICT = PrincipleValidator(
    ["KO", "PEP"], {"KO": "The Coca-Cola Company"}, max_chars=160, direction_rule="any_recommendation"
)


@pytest.mark.parametrize("text", [*CONDITIONAL, "Choose SHORT_LONG when the spread is far above its mean."])
def test_the_strict_reading_rejects_a_direction_under_a_condition(text):
    assert V.rule_broken(text) is None  # the lenient default keeps it
    assert STRICT.rule_broken(text) == "direction"


def test_the_strict_reading_keeps_principles_that_name_no_direction():
    for text in (
        "When the trading-window z-score is stretched and news is quiet, trade toward the mean.",
        "Stay FLAT only when the news of the two legs points in opposite directions.",
    ):
        assert STRICT.rule_broken(text) is None


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("The agent matched the best action on 9 of 14 steps.", None),
        ("SHORT_LONG was systematically better than LONG_SHORT this round.", None),
        ("The agent chose LONG_SHORT too often when the price change went against it.", None),
        ("FLAT was over-used.\nChoose SHORT_LONG when the spread is far above its mean.", "direction"),
        ("Going forward you should prefer long-short trades.", "direction"),
        ("KO lagged its peer through the round.", "ticker"),
        ("Coca-Cola news moved the spread twice.", "company"),
        ("The round went wrong after step 7.", "step"),
        ("Losses came in March, when both legs reported.", "date"),
    ],
)
def test_the_strict_reading_holds_the_reflection_text_to_the_same_bans(text, rule):
    assert STRICT.reflection_rule(text) == rule
    # the other readings leave the reflection text unchecked, as before
    assert V.reflection_rule(text) is None
    assert PrincipleValidator([], {}, max_chars=0, direction_rule="any_mention").reflection_rule(text) is None
