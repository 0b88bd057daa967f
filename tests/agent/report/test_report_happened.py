"""The report's "What happened" panel (agent.report.happened) on a scripted run: a real Moira
experiment on the small market with its planted break (scripted model whose directions follow
the principles it was given), and QA traces written from real Trajectory values. Every
mechanism is found at the step where the run made it; one left out reads "did not occur"."""

from __future__ import annotations

import json
import sys
from html import unescape
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pairs"))

from moira_support import mean_reversion, principles_reply, scripted, small_config, small_store

from agent.qa.core import runs
from agent.qa.core.trajectory import Step, Trajectory
from agent.report.happened import MECHANISMS, find_mechanisms, happened_section, missing
from serving.chat.types import ChatRequest

PRINCIPLE = "When the trading-window z-score is stretched, trade toward the mean."
#: the warmup reflects STAY_OUT (FLAT throughout: kept as the floor of rollback), the gate then
#: accepts PRINCIPLE (mean reversion: a better training return) and rolls back IDLE, which
#: changes no decision (the same return)
STAY_OUT = "Stay out of the market whenever the signals disagree with each other."
IDLE = "Prefer smaller positions when both legs move together."


def _follows_principles(req: ChatRequest) -> str:
    """Mean reversion when the learned principle is in the prompt, FLAT under STAY_OUT alone, the
    opposite of mean reversion without either: each accepted set changes the training return,
    one more idle principle cannot."""
    told = any(PRINCIPLE in m.content for m in req.messages)
    reply = json.loads(mean_reversion(req))
    if not told and any(STAY_OUT in m.content for m in req.messages):
        reply["action"] = "FLAT"
    elif not told:
        flip = {"LONG_SHORT": "SHORT_LONG", "SHORT_LONG": "LONG_SHORT", "FLAT": "FLAT"}
        reply["action"] = flip[reply["action"]]
    return json.dumps(reply)


def _qa_traces(root: Path) -> None:
    py = Step(1, "action", action="python", args={"code": "print(2*3)"}, observation="6", tool_ok=True)
    rejected = Step(
        2,
        "action",
        action="final_answer",
        args={"answer": "six"},
        observation="the answer must be a number",
        gate={"ok": False},
        fallback="gate_rejected",
    )
    ft = Trajectory("demo-0-001", "demo", "ft", 0, 0.0, (Step(0, "plan"), py, rejected), "6", True, ())
    hit = Trajectory(
        "demo-0-002", "demo", "ft_fm", 0, 0.0, (), "1", True, (), memory_hits=(3,), memory_similarities=(0.7,)
    )
    miss = Trajectory("demo-0-003", "demo", "ft_fm", 0, 0.0, (), "2", True, ())
    for name, trajs in (("ft", [ft]), ("ft_fm", [hit, miss])):
        runs.write_jsonl(root / "qa" / "runs" / name / runs.TRACE, [t.to_dict() for t in trajs])


@pytest.fixture(scope="module")
def scripted_demo(tmp_path_factory) -> Path:
    from agent.pairs.experiment.run import run_experiment

    root = tmp_path_factory.mktemp("happened")
    cfg, text = small_config(small_store(), policy={"max_cycles": 3, "stop_after_rejections": 2})
    backend = scripted(
        direction=_follows_principles, reflection=principles_reply([STAY_OUT], [PRINCIPLE], [IDLE])
    )
    run_experiment(cfg, root / "moira", config_text=text, backend=backend)
    _qa_traces(root)
    return root


def test_every_mechanism_of_the_scripted_run_is_found_where_it_happened(scripted_demo: Path) -> None:
    import pandas as pd

    found = {m.key: m for m in find_mechanisms(scripted_demo)}
    assert [k for k, _, _ in MECHANISMS] == list(found)
    assert missing(found.values()) == []
    trace = pd.read_parquet(scripted_demo / "moira" / "runs" / "full-no_beta-s0" / "trace.parquet")
    for key, kind in (("break", "lifecycle"), ("replacement", "select"), ("news", "news_verify")):
        m = found[key]
        row = trace.iloc[m.row]
        assert row["kind"] == kind and m.source == "moira/runs/full-no_beta-s0/trace.parquet"
        assert m.step == f"test step {int(row['step']):03d}" and m.run == "full-no_beta-s0"
    # the planted break (2015-04-06, test step 56) lies between the boundaries at 47 and 70
    assert found["break"].step >= "test step 056" and found["replacement"].step == "test step 070"
    assert "replaced by" in found["replacement"].summary
    assert "accepted" in found["gate_accept"].summary and PRINCIPLE in found["gate_accept"].texts
    assert "rejected" in found["gate_reject"].summary and IDLE in found["gate_reject"].texts
    assert "cycle 2" in found["gate_accept"].summary  # cycle 1 kept the warmup memory: not the gate
    assert "keyword category fraud in 'Lumenis Software to restate" in found["news"].summary
    assert found["cf_memory"].count > 1 and "counterfactual record" in found["cf_memory"].summary
    assert found["sandbox"].step == "demo-0-001 step 1" and found["gate_rejected"].run == "ft"
    assert found["memory_hit"].step == "demo-0-002" and found["memory_miss"].step == "demo-0-003"


def test_the_panel_links_every_row_and_names_what_did_not_occur(scripted_demo: Path, tmp_path: Path) -> None:
    html = happened_section(scripted_demo)
    for key, _, _ in MECHANISMS:
        assert f'data-mechanism="{key}"' in html and f'href="#wh-{key}"' in html and f'id="wh-{key}"' in html
    assert "did not occur" not in html
    # a QA run without the memory variant: its two memory mechanisms did not occur
    lean = tmp_path / "lean"
    (lean / "qa" / "runs" / "ft").mkdir(parents=True)
    (lean / "qa" / "runs" / "ft" / runs.TRACE).write_text(
        (scripted_demo / "qa" / "runs" / "ft" / runs.TRACE).read_text(encoding="utf-8"), encoding="utf-8"
    )
    found = find_mechanisms(lean)
    assert missing(found, parts=("FinAcumen",)) == ["memory_hit", "memory_miss"]
    page = happened_section(lean)
    assert page.count('data-occurred="no"') == 2 and "Moira" not in page  # no agent run: no Moira rows
    assert happened_section(tmp_path / "nothing") == ""


def test_the_panel_shows_each_principle_as_text_flags_markup_and_shows_trace_rows_as_json(
    scripted_demo: Path,
) -> None:
    """A principle set is listed one principle a line, escaped; one that is not prose (a small
    model's markup) is shown as written and flagged, never rendered; a trace row's fields that
    hold JSON text are shown as JSON, not as a string of escaped JSON."""
    from dataclasses import replace

    from agent.report.happened import Mechanism

    found = find_mechanisms(scripted_demo)
    garbage = "{\\bf}\\b{SHOOTING} \\\\ {},… F]{MATHEMATICS}<b>x</b>"
    shown = [replace(m, texts=(PRINCIPLE, garbage)) if m.key == "gate_accept" else m for m in found]
    html = happened_section(scripted_demo, find=lambda root, exclude=None: shown)
    row = html.split('data-mechanism="gate_accept"')[1].split("</tr>")[0]
    assert f"<li>{PRINCIPLE}</li>" in row
    assert (
        '<span class="garbled">{\\bf}\\b{SHOOTING} \\\\ {},… F]{MATHEMATICS}&lt;b&gt;x&lt;/b&gt;</span>'
        in row
    )
    assert "not readable prose" in row and "<b>x</b>" not in html
    # the trace row under the link: the decision is an object of the row, not a quoted string
    gate = next(m for m in found if m.key == "gate_accept")
    assert isinstance(gate, Mechanism) and isinstance(gate.row_fields["decision"], dict)
    details = unescape(html.split('id="wh-gate_accept"')[1].split("</details>")[0])
    assert '"decision": {' in details and '\\"' not in details
