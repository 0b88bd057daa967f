"""The ledger's locators hold: every ``paper`` row's quote is in its paper (``../shared/seeds``)
with its value stated near it and in the section it names, every ``authors`` row's tokens are on
the lines it names of the authors' released code (``../shared/vendor``); a planted mislabel of
each kind is caught with a message that names the row. The rules themselves are tested on small
texts here, so they hold where the shared folders are absent (those tests skip cleanly)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.reproduce.ledger.book import LedgerEntry, LedgerValue, load_ledger, parse_ledger
from agent.reproduce.ledger.locate import (
    WINDOW,
    PaperText,
    check_authors_row,
    check_ledger,
    check_paper_row,
    missing_roots,
    numbers_in,
    vendor_roots,
)
from localfin import configfile as cf

REPO_ROOT = Path(__file__).resolve().parents[3]
SHARED = REPO_ROOT.parent / "shared"
SEEDS = SHARED / "seeds"
VENDOR = SHARED / "vendor"
PAPER_FILES = {"moira": "moira.txt", "finacumen": "finacumen.md"}
LEDGER_DIR = REPO_ROOT / "agent" / "reproduce" / "ledger"


def _paper_text(paper: str) -> PaperText:
    path = SEEDS / PAPER_FILES[paper]
    if not path.is_file():
        pytest.skip(f"the paper's text is not at {path}")
    return PaperText.read(path, paper)


def _roots(paper: str) -> dict[str, Path]:
    roots = vendor_roots(VENDOR)
    lacking = missing_roots(roots, load_ledger(paper))
    if lacking:
        pytest.skip(f"no snapshot of {', '.join(lacking)} under {VENDOR}")
    return roots


def _ledger_text(paper: str, old: str, new: str):
    """A copy of the packaged ledger with one row's text replaced (the planted mislabel)."""
    text = (LEDGER_DIR / f"{paper}.toml").read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the row to plant into is not once in {paper}.toml: {old}"
    return parse_ledger(cf.loads_toml(text.replace(old, new), paper), paper)


# -- the packaged ledgers against the texts -------------------------------------------------------


@pytest.mark.parametrize("paper", list(PAPER_FILES))
def test_every_paper_row_is_located_in_its_paper(paper: str) -> None:
    text = _paper_text(paper)
    ledger = load_ledger(paper)
    assert sum(v.provenance == "paper" for e in ledger.entries for v in e.values) > 20
    assert check_ledger(ledger, text, None) == []


@pytest.mark.parametrize("paper", list(PAPER_FILES))
def test_every_authors_row_holds_its_token_at_its_line(paper: str) -> None:
    roots = _roots(paper)
    assert check_ledger(load_ledger(paper), None, roots) == []


def test_the_authors_rows_are_checked_at_all() -> None:
    """FinAcumen's ledger names the authors' code; the check above is not vacuous."""
    rows = [v for e in load_ledger("finacumen").entries for v in e.values if v.provenance == "authors"]
    assert len(rows) > 20 and all(v.at.startswith("FinAcumen/") and v.token for v in rows)


# -- one planted mislabel of each kind, in a copy of the ledger ------------------------------------


def test_a_planted_fake_quote_is_caught() -> None:
    text = _paper_text("moira")
    led = _ledger_text(
        "moira", 'quote = "with at most eight replay cycles"', 'quote = "with at most nine replay cycles"'
    )
    assert check_ledger(led, text, None) == [
        "variants[].policy.max_cycles = 8: quote 'with at most nine replay cycles' is not in the moira text"
    ]


def test_a_planted_wrong_number_near_a_real_quote_is_caught() -> None:
    text = _paper_text("moira")
    old = (
        '{ value = 8, provenance = "paper", section = "App. C", quote = "with at most eight replay cycles" }'
    )
    led = _ledger_text("moira", old, old.replace("value = 8", "value = 6"))
    assert check_ledger(led, text, None) == [
        "variants[].policy.max_cycles = 6: value check failed at quote 'with at most eight replay cycles' "
        f"(6 not stated within {WINDOW} characters of the quote)"
    ]


def test_a_planted_wrong_line_for_a_token_is_caught() -> None:
    roots = _roots("finacumen")
    old = 'at = "FinAcumen/finacumen/fm/cross_verify.py:40", token = "T_WRITING = 0.3"'
    led = _ledger_text("finacumen", old, old.replace(":40", ":41"))
    assert check_ledger(led, None, roots) == [
        "qa.summary_temperature = 0.3: FinAcumen/finacumen/fm/cross_verify.py:41 does not hold token(s) "
        "['T_WRITING = 0.3']"
    ]


def test_a_planted_wrong_section_is_caught() -> None:
    """The k_max sweep is §5.5's (citing it as §5.4 was a mislabel of the ledger)."""
    text = _paper_text("finacumen")
    old = 'section = "§5.5", quote = "We test $k_{\\\\text{max}}\\\\in\\\\{1,3,5,7\\\\}$"'
    led = _ledger_text("finacumen", old, old.replace("§5.5", "§5.4"))
    assert check_ledger(led, text, None) == [
        "qa.k_max = [1, 3, 5, 7]: value check failed at quote "
        "'We test $k_{\\\\text{max}}\\\\in\\\\{1,3,5,7\\\\}$' (the quote stands in section 5.5, not §5.4)"
    ]


def test_a_planted_missing_file_and_a_range_past_its_end_are_caught() -> None:
    roots = _roots("finacumen")
    e = load_ledger("finacumen").entry_for("qa.summary_temperature")
    row = next(v for v in e.values if v.provenance == "authors")
    gone = LedgerValue("authors", 0.3, at="FinAcumen/finacumen/fm/no_such.py:40", token=row.token)
    past = LedgerValue("authors", 0.3, at="FinAcumen/finacumen/fm/cross_verify.py:9000", token=row.token)
    assert check_authors_row(e, gone, roots) == [
        "qa.summary_temperature = 0.3: FinAcumen/finacumen/fm/no_such.py:40: "
        "no file finacumen/fm/no_such.py in FinAcumen"
    ]
    assert "cross_verify.py has" in check_authors_row(e, past, roots)[0]


# -- the rules, on small texts (no shared folder needed) -------------------------------------------

_MOIRA_LIKE = (
    """4 Experiments

4.1 Experiment Setup

We use a 16,384-token limit and 1,024 tokens for steps; the threshold is 0.65 and
the cycles at most eight. Training covers 28 sessions (2 December 2024–13 January 2025).

A.6 Runtime Composition

Pair selection: {"current_step": "step XXX", "top5_candidates": []}

Open-weight run settings. The recorded runs use server-default sampling.

Table 9: Approximate tokens per call.
"""
    + "filler words " * 40
    + """the far value 250 lies here.
"""
)


def _row(value, quote: str, section: str = "§4.1", **kw) -> LedgerValue:
    return LedgerValue("paper", value, section=section, quote=quote, **kw)


_E = LedgerEntry("x.y", "screen", "t", paper="p", values=(LedgerValue("ours", 1, why="w"),))


def test_numbers_are_compared_as_numbers() -> None:
    assert {16384.0, 1024.0, 0.65, 8.0} <= set(
        numbers_in("a 16,384-token cap, 1,024 steps, $\\tau=0.65$, eight")
    )
    assert {0.0, 120.0, 240.0} <= set(numbers_in("$S\\in\\{0,120,240,\\dots\\}$"))
    text = PaperText.parse(_MOIRA_LIKE, "moira")
    for value in (16384, 1024, 1024.0, 0.65, 8, 28):
        assert check_paper_row(_E, _row(value, "We use a 16,384-token limit"), text) == [], value
    assert check_paper_row(_E, _row(16385, "We use a 16,384-token limit"), text)
    assert check_paper_row(_E, _row(5, '"top5_candidates": []', section="App. A.6"), text) == []


def test_the_value_must_stand_within_the_window() -> None:
    text = PaperText.parse(_MOIRA_LIKE, "moira")
    far = check_paper_row(_E, _row(250, "Approximate tokens per call", section="Table 9"), text)
    assert far and "250 not stated" in far[0]
    assert check_paper_row(_E, _row(250, "the far value 250 lies here", section="Table 9"), text) == []


def test_strings_dates_and_stated_follow_their_rules() -> None:
    text = PaperText.parse(_MOIRA_LIKE, "moira")
    q = "Training covers 28 sessions"
    assert check_paper_row(_E, _row("2024-12-02", q), text) == []
    assert check_paper_row(_E, _row("2025-01-13", q), text) == []
    assert check_paper_row(_E, _row("2025-01-12", q), text)  # not the day stated
    assert check_paper_row(_E, _row("server-default", "The recorded runs use", section="App. C"), text) == []
    assert check_paper_row(
        _E, _row("default-server", "The recorded runs use", section="App. C"), text
    )  # order
    # a value in our units: checked by what the paper states
    row = _row(2520, "the cycles at most eight", stated=8, why="8 of something")
    assert check_paper_row(_E, row, text) == []
    assert check_paper_row(_E, _row(2520, "the cycles at most eight"), text)
    # a boolean or unset value is the quote's own statement: only the quote and section are read
    assert check_paper_row(_E, _row(True, "The recorded runs use", section="App. C"), text) == []
    assert (
        check_paper_row(
            _E, LedgerValue("paper", unset=True, section="App. C", quote="server-default sampling"), text
        )
        == []
    )


def test_sections_are_read_from_the_headings() -> None:
    text = PaperText.parse(_MOIRA_LIKE, "moira")
    assert check_paper_row(_E, _row(8, "the cycles at most eight", section="§4"), text) == []  # a parent
    assert (
        "stands in section 4.1, not §4.2"
        in check_paper_row(_E, _row(8, "the cycles at most eight", section="§4.2"), text)[0]
    )
    # the run-in heading restored: Moira's inference settings are Appendix C's
    assert (
        check_paper_row(
            _E, LedgerValue("paper", unset=True, section="App. C", quote="server-default sampling"), text
        )
        == []
    )
    wrong = LedgerValue("paper", unset=True, section="App. A.6", quote="server-default sampling")
    assert "stands in section C, not App. A.6" in check_paper_row(_E, wrong, text)[0]
    # a table: its caption's block or a mention near the quote
    assert check_paper_row(_E, _row(250, "the far value 250 lies here", section="Table 9"), text) == []
    assert check_paper_row(_E, _row(250, "the far value 250 lies here", section="Table 8"), text)


def test_quotes_are_normalised_but_verbatim() -> None:
    text = PaperText.parse(_MOIRA_LIKE, "moira")
    assert check_paper_row(_E, _row(28, "TRAINING   covers\n28 sessions"), text) == []  # case, whitespace
    assert "is not in the moira text" in check_paper_row(_E, _row(28, "Training spans 28 sessions"), text)[0]


def test_an_authors_token_must_be_on_its_lines(tmp_path: Path) -> None:
    root = tmp_path / "FinAcumen"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "m.py").write_text("A = 1\nT_X = 0.7\n\ndef f():\n    return  T_X\n", encoding="utf-8")
    roots = {"FinAcumen": root}
    ok = LedgerValue("authors", 0.7, at="FinAcumen/pkg/m.py:2", token="T_X = 0.7")
    span = LedgerValue("authors", 0.7, at="FinAcumen/pkg/m.py:2-5", token=["T_X = 0.7", "return T_X"])
    off = LedgerValue("authors", 0.7, at="FinAcumen/pkg/m.py:1", token="T_X = 0.7")
    assert check_authors_row(_E, ok, roots) == [] and check_authors_row(_E, span, roots) == []
    assert check_authors_row(_E, off, roots) == [
        "x.y = 0.7: FinAcumen/pkg/m.py:1 does not hold token(s) ['T_X = 0.7']"
    ]
    assert check_authors_row(_E, ok, {}) == [
        "x.y = 0.7: no snapshot of FinAcumen to check FinAcumen/pkg/m.py:2"
    ]
