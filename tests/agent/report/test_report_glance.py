"""The report's first screen on tiny run folders: the best run of each metric (never a run without
a value, ties named as ties, the agent's best beside another method's lead), what a CPU or a
random test model can and cannot show, the warning on a short window, QA's most accurate variant;
and model-written text that is not prose shown as written and flagged."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from html import unescape
from pathlib import Path
from types import SimpleNamespace

import pytest
import report_support as rs

from agent.pairs.market.metrics import FEW_TRANSITIONS
from agent.report.build import build_report
from agent.report.glance import best_runs, glance_section, model_caveats
from agent.report.html import esc
from agent.report.load import load_input
from agent.report.prose import is_prose, model_text
from agent.report.tables import run_results


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    exp = rs.experiment(tmp_path_factory.mktemp("glance") / "e", exposures=("no_beta",))
    res = build_report(exp)
    return exp, res.html.read_text(encoding="utf-8")


def _results(exp: Path):
    return run_results(load_input(exp).runs)


def test_the_best_run_of_each_metric_is_the_largest_never_undefined(built) -> None:
    exp, _ = built
    results = _results(exp)
    bests = {b.metric: b for b in best_runs(results)}
    assert list(bests) == ["cumulative_return", "annual_return", "sharpe", "calmar", "max_drawdown"]
    for metric, b in bests.items():
        values = [getattr(r.metrics, metric) for r in results]
        finite = [v for v in values if math.isfinite(v)]
        assert b.value == max(finite) and b.n_valued == len(finite), metric
        assert all(getattr(r.metrics, metric) == b.value for r in b.leaders)
    # a run without a Sharpe ratio (a run that never traded) is never the best of it
    flat = next(r for r in results if r.run.run_id == "long_short-no_beta-seed0")
    nan_run = SimpleNamespace(run=flat.run, metrics=replace(flat.metrics, sharpe=math.nan))
    only = {b.metric: b for b in best_runs([nan_run])}
    assert "sharpe" not in only and only["cumulative_return"].leaders == (nan_run,)


def test_the_agents_best_run_and_its_rank_stand_beside_another_methods_lead(built) -> None:
    exp, _ = built
    results = _results(exp)
    for b in best_runs(results):
        if any(r.run.kind == "moira" for r in b.leaders):
            assert b.agent_best is None
            continue
        agent = [r for r in results if r.run.kind == "moira"]
        value = max(getattr(r.metrics, b.metric) for r in agent)
        assert getattr(b.agent_best.metrics, b.metric) == value
        better = sum(1 for r in results if getattr(r.metrics, b.metric) > value)
        assert b.agent_rank == better + 1


def test_the_first_screen_names_the_best_runs_the_models_limits_and_a_short_window(built) -> None:
    exp, html = built
    glance = html.split('<section class="glance" id="glance">')[1].split("</section>")[0]
    # before the navigation and every panel
    assert html.index('id="glance"') < html.index("<nav>") < html.index('id="happened"')
    text = unescape(glance)
    assert 'data-role="caveat"' in glance and "tiny random Qwen3 (tiny-qwen3)" in text
    assert "random weights" in text and "mean nothing" in text
    results = _results(exp)
    best = max(results, key=lambda r: r.metrics.cumulative_return)
    row = glance.split('data-metric="cumulative_return"')[1].split("</tr>")[0]
    assert best.run.run_id in unescape(row) and repr(best.metrics.cumulative_return) in row
    assert 'data-role="best"' in glance and "Best run per metric" in text
    assert "Only 6 settled transitions" in text and str(FEW_TRANSITIONS) in text


def test_what_a_cpu_model_can_and_cannot_show_and_no_word_on_a_gpu_or_unknown_model() -> None:
    entries = {
        "smollm2-135m": SimpleNamespace(
            device="cpu", source="pip_package", stand_in=False, display_name="SmolLM2-135M-Instruct"
        ),
        "qwen3-4b": SimpleNamespace(
            device="gpu", source="local_dir", stand_in=False, display_name="Qwen3-4B"
        ),
    }
    said = model_caveats(["smollm2-135m", "qwen3-4b", "my-model", ""], entries.get)
    assert len(said) == 1
    text = said[0]
    assert "SmolLM2-135M-Instruct (smollm2-135m)" in text and "on the CPU" in text
    assert "works end to end" in text and "cannot show how well Moira trades or FinAcumen answers" in text
    assert "GPU backbone" in text
    # the real registry: the demo's model is the CPU model
    assert "SmolLM2-135M" in model_caveats(["smollm2-135m"])[0]


def test_the_qa_line_names_the_most_accurate_variant_or_the_tie(tmp_path: Path) -> None:
    exp = rs.experiment(tmp_path / "e", exposures=("no_beta",))

    def qa(folder: str, correct: dict[str, int]) -> None:
        doc = {
            "model": "smollm2-135m",
            "variants": {
                k: {"correct": c, "n": 6, "accuracy": c / 6, "mean_total_tokens": 100, "mean_engine_s": 0.1}
                for k, c in correct.items()
            },
        }
        (tmp_path / "e" / folder).mkdir()
        (tmp_path / "e" / folder / "qa_report.json").write_text(json.dumps(doc), encoding="utf-8")

    qa("qa", {"base": 0, "ft": 2, "ft_fm": 1})
    qa("qa2", {"base": 0, "ft": 0, "ft_fm": 0})
    html = unescape(glance_section(_results(exp), exp))
    assert "qa: best: Base+FT, 2/6 (33%)" in html and "qa2: all 3 variants tie at 0/6 (0%)" in html
    # a QA model joins the models the first screen speaks of
    assert "SmolLM2-135M" in html


@pytest.mark.parametrize(
    ("text", "prose"),
    [
        ("When the trading-window z-score is stretched, trade toward the mean.", True),
        ("Go FLAT on a BREAK; prefer SHORT_LONG when z > 2 (about 2% of days).", True),
        ("Hold.", True),
        ("{\\bf}\\b{SHOOTING} \\\\ {},… F]{MATHEMATICS}…", False),
        ("<script>alert(1)</script>", False),
        ("§§ ¶¶ ¤¤ ®® ©© ««", False),
        ("", False),
        ("Hold\x01 the\x02 pair\x03 \x04\x05", False),
    ],
)
def test_what_reads_as_prose(text: str, prose: bool) -> None:
    assert is_prose(text) is prose
    shown = model_text(text)
    assert "<script>" not in shown
    if prose:
        assert shown == esc(text)
    else:  # escaped, in full (control characters as their pictures), in its box, and flagged
        visible = "".join(chr(0x2400 + ord(c)) if ord(c) < 0x20 else c for c in text)
        assert shown.startswith(f'<span class="garbled">{esc(visible)}</span>')
        assert "not readable prose" in shown
