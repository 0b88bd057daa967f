"""The report page on tiny run folders: it lists every run and baseline, the numbers on it equal
the metrics computed from the steps, NaN shows as n/a, it references only its own local files,
panels without input become notes, and it is written atomically (a failed build or a foreign
--out folder leaves what was there); on the synthetic market with the real baseline writers."""

from __future__ import annotations

import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import report_support as rs

from agent.pairs.market.metrics import compute_metrics
from agent.pairs.market.records import read_json, read_steps, write_json
from agent.report import figures as fg
from agent.report.build import build_report
from agent.report.html import fmt_int, fmt_num, fmt_pct, fmt_pm, fmt_range
from localfin.errors import InputError


class _Page(HTMLParser):
    """Tables (by class) as rows of (row attrs, [(cell attrs, text)]), every src/href, every tag."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[tuple[dict[str, str], list[tuple[dict[str, str], str]]]]] = {}
        self.links: list[str] = []
        self.tags: set[str] = set()
        self.text: list[str] = []
        self._table = ""
        self._row: Any = None
        self._cell: Any = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.add(tag)
        self.links += [a[k] for k in ("src", "href") if k in a]
        if tag == "table":
            self._table = a.get("class", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tr":
            self._row = (a, [])
        elif tag in ("td", "th") and self._row is not None:
            self._cell = [a, ""]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            if tag == "td":
                self._row[1].append((self._cell[0], self._cell[1].strip()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            if self._row[1]:
                self.tables[self._table].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell[1] += data


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def cells(row: tuple[dict[str, str], list[tuple[dict[str, str], str]]]) -> dict[str, tuple[float, str]]:
    """metric -> (data-value, text) of one row."""
    return {a["data-metric"]: (float(a["data-value"]), t) for a, t in row[1] if "data-metric" in a}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, _Page]:
    exp = rs.experiment(tmp_path_factory.mktemp("exp"))
    res = build_report(exp)
    return exp, res, parse(res.html)


def test_the_page_lists_every_run_and_every_baseline(built) -> None:
    exp, res, page = built
    run_ids = sorted(p.name for p in (exp / "runs").iterdir())
    assert res.n_runs == len(run_ids) == 16 and res.n_sections == 2
    assert sorted(r[0]["data-run"] for r in page.tables["runs"]) == run_ids
    results = page.tables["results"]
    assert len(results) == 12  # 6 settings x 2 exposures
    for exposure in ("no_beta", "beta"):
        shown = {r[0]["data-run"] for r in results if r[0]["data-run"].split("-")[1] == exposure}
        assert shown == {
            f"full-{exposure}-s1",  # Moira's median-return run
            *(
                f"{m}-{exposure}-seed0"
                for m in ("long_short", "short_long", "equal_weight", "eg_z", "eg_ddqn")
            ),
        }
    assert res.html == exp / "report" / "index.html"
    assert res.notes == () and res.skipped == ()


def test_numbers_on_the_page_equal_the_metrics_computed_from_the_steps(built) -> None:
    exp, _, page = built
    for row in page.tables["results"]:
        steps = read_steps(exp / "runs" / row[0]["data-run"] / "steps.parquet")
        m = rs.writer_metrics(steps)
        c = cells(row)
        expect = {
            "cumulative_return": (m.cumulative_return, fmt_pct(m.cumulative_return)),
            "sharpe": (m.sharpe, fmt_pm(m.sharpe, m.sharpe_se)),
            "max_drawdown": (m.max_drawdown, fmt_pct(m.max_drawdown)),
            "annual_volatility": (m.annual_volatility, fmt_pct(m.annual_volatility, signed=False)),
            "sortino": (m.sortino, fmt_num(m.sortino)),
            "win_rate": (m.win_rate, fmt_pct(m.win_rate, 1, signed=False)),
            "action_accuracy": (m.action_accuracy, fmt_pct(m.action_accuracy, 1, signed=False)),
            "pair_switches": (m.pair_switches, fmt_int(m.pair_switches)),
        }
        for name, (value, text) in expect.items():
            shown, shown_text = c[name]
            assert (math.isnan(shown) and math.isnan(value)) or shown == pytest.approx(
                value, rel=1e-12, abs=1e-15
            )
            assert shown_text == text, (row[0]["data-run"], name)
        assert float(row[0]["data-sharpe-se"]) == pytest.approx(m.sharpe_se, rel=1e-12)
    # the spread across Moira's seeds (min .. max of cumulative returns of the three runs)
    moira = next(r for r in page.tables["results"] if r[0]["data-run"] == "full-no_beta-s1")
    rets = [
        compute_metrics(
            [s.realized for s in read_steps(exp / "runs" / f"full-no_beta-s{k}" / "steps.parquet")]
        ).cumulative_return
        for k in range(3)
    ]
    assert float(moira[0]["data-return-min"]) == pytest.approx(min(rets))
    assert float(moira[0]["data-return-max"]) == pytest.approx(max(rets))
    assert fmt_range(min(rets), max(rets)) in [t for _, t in moira[1]]
    assert "3 (2, 1, 0)" in [t for _, t in moira[1]]


def test_undefined_numbers_show_as_na(built) -> None:
    _, _, page = built
    ew = next(r for r in page.tables["results"] if r[0]["data-run"] == "equal_weight-no_beta-seed0")
    c = cells(ew)
    assert math.isnan(c["action_accuracy"][0]) and c["action_accuracy"][1] == "n/a"
    assert c["accepted_updates"][1] == "n/a"  # no policy memory
    assert not any(t in ("nan", "NaN", "inf") for _, t in ew[1])
    assert "nan" not in " ".join(page.text).lower().split()


def test_the_page_references_only_its_own_local_files(built) -> None:
    _, res, page = built
    text = res.html.read_text(encoding="utf-8")
    assert not ({"script", "link", "iframe", "object", "embed"} & page.tags)
    assert "url(" not in text and "@import" not in text
    assert page.links, "the page has figures"
    for link in page.links:
        if link.startswith("#"):
            continue
        assert not re.match(r"^[a-z][a-z0-9+.-]*:|^//|^/", link, re.I), link
        assert (res.out_dir / link).is_file(), link
    figs = sorted(p.name for p in (res.out_dir / "figures").iterdir())
    assert figs == sorted(p.name for p in res.figures) and len(figs) == 15
    for f in res.figures:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in res.out_dir.iterdir()) == ["figures", "index.html"]


def test_tokens_and_fallbacks_are_on_the_page(built) -> None:
    _, res, page = built
    tok = [r for r in page.tables["tokens"] if r[0]["data-run"] == "full-no_beta-s1"]
    assert [r[0]["data-call-type"] for r in tok] == ["direction", "pair_selection", "reflection", "total"]
    total = cells(tok[-1])
    assert total["calls"] == (14.0, "14") and total["prompt_tokens"][1] == "1,600"
    assert total["test_tokens_per_step"][1] == fmt_num((660 + 320) / 6, 1)
    assert total["cached_tokens"][1] == "n/a"
    # one direction call's prompt, completion and total tokens (Table 9: each range on its own)
    assert [t for _, t in tok[0][1]][-3:] == ["92 .. 102", "9 .. 14", "101 .. 116"]
    # the run's own validation cycle (its manifest: 6 sessions), never the paper's 23
    cycle = re.search(r'data-metric="tokens_per_cycle" data-value="([^"]+)">([^<]*)', res.html.read_text())
    assert cycle and float(cycle.group(1)) == pytest.approx((660 + 320) / 6 * 6)
    assert cycle.group(2).startswith("Test tokens per 6-step validation cycle: ")
    assert f": {fmt_int(round((660 + 320) / 6 * 6))} (test tokens per step x 6)" in cycle.group(2)
    assert "23-step" not in res.html.read_text()
    engine = {r[0]["data-call-type"]: cells(r) for r in page.tables["engine"]}
    assert engine["total"]["cached_tokens"] == (1200.0, "1,200") and engine["total"]["invalid"][1] == "3"
    fb = [r for r in page.tables["fallbacks"] if r[0]["data-run"] == "full-no_beta-s1"]
    assert [[t for _, t in r[1]][:4] for r in fb] == [
        ["test", "direction", "2", "2, 5"],
        ["train", "direction", "1", "r1:3"],
    ]


def test_a_baselines_only_folder_gets_notes_instead_of_panels(tmp_path: Path) -> None:
    exp = rs.experiment(tmp_path / "b", with_moira=False, exposures=("beta",))
    (exp / "runs" / "eg_ddqn-beta-seed0" / "training.json").unlink()
    (exp / "runs" / "junk").mkdir()
    (exp / "runs" / "junk" / "metrics.json").write_text("{not json", encoding="utf-8")
    (exp / "runs" / "junk" / "steps.parquet").write_bytes(b"")
    res = build_report(exp, tmp_path / "out")
    text = " ".join(parse(res.html).text)
    for phrase in (
        "Training dynamics: no run of this section has a training.json",
        "Break-score evolution: no run of this section has lifecycle rows",
        "Tokens: no run of this section called a model.",
        "Fallbacks: no run of this section called a model.",
        "No experiment folder holds engine token totals",
        "Not pair actions (pool positions), left out: Equal-Weight.",
    ):
        assert phrase in text, phrase
    assert res.n_runs == 5 and [p for p, _ in res.skipped] == ["runs/junk"]
    assert any(n.startswith("skipped runs/junk: cannot read") for n in res.notes)


def test_a_metrics_json_that_disagrees_is_marked(tmp_path: Path) -> None:
    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("no_beta",))
    p = exp / "runs" / "eg_z-no_beta-seed0" / "metrics.json"
    doc = read_json(p)
    doc["metrics"]["cumulative_return"] = 0.5
    write_json(p, doc)
    res = build_report(exp)
    page = parse(res.html)
    row = next(r for r in page.tables["results"] if r[0]["data-run"] == "eg_z-no_beta-seed0")
    assert row[1][0][1].startswith("EG+Z *")
    assert cells(row)["cumulative_return"][0] != 0.5  # the steps win
    assert (
        res.notes
        and "eg_z-no_beta-seed0: metrics.json differs from its steps in cumulative_return" in res.notes[0]
    )


def test_the_report_is_replaced_atomically_and_never_over_a_foreign_folder(
    tmp_path: Path, monkeypatch
) -> None:
    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("no_beta",))
    first = build_report(exp).html.read_text(encoding="utf-8")

    def boom(*_: Any, **__: Any) -> Path:
        raise RuntimeError("drawing failed")

    monkeypatch.setattr(fg, "plot_equity", boom)
    with pytest.raises(RuntimeError, match="drawing failed"):
        build_report(exp)
    assert (exp / "report" / "index.html").read_text(encoding="utf-8") == first
    assert sorted(p.name for p in exp.iterdir()) == ["report", "runs"]  # no temporary folder left
    monkeypatch.undo()
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(InputError, match="not a report folder"):
        build_report(exp, foreign)
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"
    res = build_report(exp, tmp_path / "new" / "r")
    assert res.html.is_file()


def test_bad_input_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is not a folder"):
        build_report(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no readable run folder"):
        build_report(tmp_path / "empty")
    exp = rs.experiment(tmp_path / "e", with_moira=False, exposures=("no_beta",))
    with pytest.raises(InputError, match="rolling_window=0"):
        build_report(exp, rolling_window=0)


def test_the_report_of_real_baseline_runs_on_the_synthetic_market(
    synthetic_store_path: Path, tmp_path: Path
) -> None:
    from agent.data.store import MarketStore
    from agent.pairs.baselines.eg_ddqn import DDQNConfig
    from agent.pairs.baselines.eg_z import EGZConfig
    from agent.pairs.baselines.equal_weight import EqualWeightConfig
    from agent.pairs.baselines.fixed_direction import LONG_SHORT_CONFIG, SHORT_LONG_CONFIG
    from agent.pairs.baselines.runner import run_all

    pool = ["GRNF", "HRBK", "KSTR", "MLWD", "NRGX", "OKSN", "PTRV", "SLTN"]
    ddqn = DDQNConfig(history_sessions=100, episodes=2, eps_decay_episodes=1, min_replay=32, batch_size=16)
    with MarketStore(synthetic_store_path) as store:
        results = run_all(
            store,
            pool=pool,
            train=("2016-11-01", "2016-12-30"),
            test=("2017-01-02", "2017-02-28"),
            out_dir=tmp_path,
            configs=(LONG_SHORT_CONFIG, SHORT_LONG_CONFIG, EqualWeightConfig(), EGZConfig(), ddqn),
        )
    res = build_report(tmp_path)
    page = parse(res.html)
    assert res.notes == ()  # every metrics.json agrees with its steps
    assert sorted(r[0]["data-run"] for r in page.tables["runs"]) == sorted(r.run_id for r in results)
    for row in page.tables["results"]:
        doc = read_json(tmp_path / "runs" / row[0]["data-run"] / "metrics.json")["metrics"]
        for name, (value, _) in cells(row).items():
            if name in doc:
                w = doc[name]
                assert (w is None and math.isnan(value)) or value == pytest.approx(w, rel=1e-12, abs=1e-15), (
                    name
                )


def test_names_in_table_cells_are_kept_whole() -> None:
    from agent.report.html import names

    assert names("full-beta-s0, test step 004") == '<span class="nb">full-beta-s0,</span> test step 004'
    assert names("moira/runs/full-beta-s0/trace.parquet") == (
        '<span class="nb">moira/</span><wbr><span class="nb">runs/</span><wbr>'
        '<span class="nb">full-beta-s0/</span><wbr><span class="nb">trace.parquet</span>'
    )
    assert names("the equal-magnitude legs <b> & +2.49%") == "the equal-magnitude legs &lt;b&gt; &amp; +2.49%"
    shown = names("EG-DDQN on YYYY-MM-DD")
    assert shown == '<span class="nb">EG-DDQN</span> on <span class="nb">YYYY-MM-DD</span>'
