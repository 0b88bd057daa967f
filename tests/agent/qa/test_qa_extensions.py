"""QA datasets with their scorers and tools from installed plugins (entry-point groups
``localfin.qa_datasets`` and ``localfin.tools``): a throwaway distribution on sys.path. Its items
load through ``load_items``, its scorer grades through ``score_answer``, its tool is offered by the
toolset and called by the ReAct loop; a plugin that breaks its contract is an error naming it."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap

import pytest
from qa_fakes import PLAN, act, final, turn_of

from agent.qa.data.datasets import load_items
from agent.qa.data.extensions import DATASETS_REGISTRY, TOOLS_REGISTRY, dataset_names, tool_names
from agent.qa.evaluation.evaluate import EvalConfig, evaluate
from agent.qa.scoring.scoring import score_answer, scorer_name
from agent.qa.solver.react import SolverConfig
from agent.qa.solver.toolset import ToolsetConfig, tool_factory
from localfin.errors import ConfigError
from localfin.plugins import PluginError
from serving.chat.scripted import Rule, ScriptedBackend

PLUGIN = """
import json

from agent.qa.data.extensions import QADataset, ToolPlugin
from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold, QAItem, Question
from agent.qa.loaders.records import SkippedItem


def load(path, split):
    for line, text in enumerate(path.read_text().splitlines(), start=1):
        rec = json.loads(text)
        if "answer" not in rec:
            yield SkippedItem(str(path), line, rec.get("id", ""), "no answer")
            continue
        q = Question(rec["id"], rec.get("dataset", "doubles"), rec["question"], context=rec["context"])
        yield QAItem(q, Gold(answer=rec["answer"]), rec.get("split", "test"))


def score(gold, prediction):
    ok = prediction.strip() == str(gold.answer)
    return ItemScore(ok, float(ok), f"doubles rule: {prediction!r} vs {gold.answer!r}")


def bad_score(gold, prediction):
    return 7


DOUBLES = QADataset("doubles", load, score, scorer_name="exact text")
BAD_SCORER = QADataset("bad_scorer", load, bad_score)


def double(args):
    if args["x"] == 13:
        raise ValueError("unlucky")
    return str(2 * args["x"])


TWICE = ToolPlugin(
    "twice",
    'twice a number, args {"x": 3}',
    {
        "type": "object",
        "properties": {"x": {"type": "integer"}},
        "required": ["x"],
        "additionalProperties": False,
    },
    double,
)
NOT_A_TOOL = {"name": "x"}
"""

GOOD = """
[localfin.qa_datasets]
doubles = fake_qa_plugin:DOUBLES
bad_scorer = fake_qa_plugin:BAD_SCORER

[localfin.tools]
twice = fake_qa_plugin:TWICE
"""


@pytest.fixture()
def plugin_site(tmp_path, monkeypatch):
    def install(entry_points: str, name: str = "fake-qa-plugin") -> None:
        site = tmp_path / "site"
        site.mkdir()
        (site / "fake_qa_plugin.py").write_text(PLUGIN)
        info = site / f"{name.replace('-', '_')}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
        monkeypatch.syspath_prepend(str(site))
        importlib.invalidate_caches()
        DATASETS_REGISTRY.refresh()
        TOOLS_REGISTRY.refresh()

    yield install
    monkeypatch.undo()
    sys.modules.pop("fake_qa_plugin", None)
    importlib.invalidate_caches()
    DATASETS_REGISTRY.refresh()
    TOOLS_REGISTRY.refresh()


def _data(tmp_path, *extra: dict) -> object:
    rows = [
        {
            "id": f"d{i}",
            "question": f"What is twice {i}?",
            "context": f"The number is {i}.",
            "answer": str(2 * i),
        }
        for i in range(1, 4)
    ]
    path = tmp_path / "doubles.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [*rows, *extra]) + "\n")
    return path


def test_unknown_names_list_the_installed_plugins(plugin_site, tmp_path):
    with pytest.raises(ConfigError, match=r"unknown QA dataset 'doubles'; allowed: tatqa, .*, demo$"):
        load_items("doubles", tmp_path)
    plugin_site(GOOD)
    assert dataset_names()[-2:] == ["bad_scorer", "doubles"] and tool_names()[-1] == "twice"
    with pytest.raises(
        ConfigError, match=r"unknown QA dataset 'dubles'; allowed: .*, demo, bad_scorer, doubles"
    ):
        score_answer("dubles", None, "1")
    with pytest.raises(ConfigError, match=r"names has \['twise'\]; allowed: python, .*, retrieve, twice"):
        ToolsetConfig(names=("twise",))


def test_a_plugin_dataset_loads_and_its_scorer_grades(plugin_site, tmp_path):
    plugin_site(GOOD)
    loaded = load_items("doubles", _data(tmp_path, {"id": "d9", "question": "?", "context": ""}), limit=2)
    assert [it.item_id for it in loaded.items] == ["d1", "d2"]
    loaded = load_items("doubles", _data(tmp_path, {"id": "d9", "question": "?", "context": ""}))
    assert len(loaded) == 3 and [(s.line, s.item_id, s.reason) for s in loaded.skipped] == [
        (4, "d9", "no answer")
    ]
    gold = loaded.items[1].gold
    assert score_answer("doubles", gold, "4").correct and not score_answer("doubles", gold, "5").correct
    assert score_answer("doubles", gold, "4").detail == "doubles rule: '4' vs '4'"
    assert score_answer("doubles", gold, "  ").detail == "empty prediction"
    assert scorer_name("doubles") == "exact text" and scorer_name("bizbench").startswith("BizBench")
    with pytest.raises(ConfigError, match="doubles has no subsets"):
        load_items("doubles", tmp_path / "doubles.jsonl", subset="easy")
    with pytest.raises(
        PluginError, match=r"scorer of QA dataset 'bad_scorer' \(plugin fake-qa-plugin .*returned 7"
    ):
        score_answer("bad_scorer", gold, "4")
    # an item of another dataset is refused, naming the plugin
    (tmp_path / "other.jsonl").write_text(
        json.dumps({"id": "x", "dataset": "tatqa", "question": "q", "context": "", "answer": "1"}) + "\n"
    )
    with pytest.raises(PluginError, match=r"'doubles' \(plugin fake-qa-plugin .*item 'x' of dataset 'tatqa'"):
        load_items("doubles", tmp_path / "other.jsonl")


def test_a_plugin_tool_is_called_by_the_solver(plugin_site, tmp_path):
    plugin_site(GOOD)
    items = load_items("doubles", _data(tmp_path)).items

    def reply(req):
        t = turn_of(req)
        if t == 0:
            return json.dumps(PLAN)
        last = req.messages[-1].content
        if "Output of twice:" in last:
            return final(last.split("Output of twice:\n")[1].split()[0])
        first = next(m.content for m in req.messages if m.role == "user")
        n = int(first.split("The number is ")[1].split(".")[0])
        return act("twice", x=13 if t == 1 and n == 3 else n)  # item d3: the tool fails once

    be = ScriptedBackend([Rule("qa_solve", reply)])
    factory = tool_factory(ToolsetConfig(names=("twice",)))
    res = evaluate(
        items, be, tmp_path / "run", EvalConfig("ft", SolverConfig(model="smollm2-135m")), tools=factory
    )
    assert (res.n, res.correct) == (3, 3)
    traces = [json.loads(x) for x in (tmp_path / "run" / "trace.jsonl").read_text().splitlines()]
    for t in traces:
        calls = [s for s in t["steps"] if s["action"] == "twice"]
        assert calls[-1]["tool_ok"] is True and t["score_detail"].startswith("doubles rule")
    d3 = next(t for t in traces if t["item_id"] == "d3")
    first = next(s for s in d3["steps"] if s["action"] == "twice")
    assert (
        first["tool_ok"] is False and "unlucky" in first["observation"] and first["fallback"] == "tool_crash"
    )


def test_a_broken_tool_plugin_is_an_error_naming_it(plugin_site):
    plugin_site("[localfin.tools]\nx = fake_qa_plugin:NOT_A_TOOL\n", name="broken-tools")
    with pytest.raises(PluginError, match=r"plugin broken-tools .*tool 'x' is refused: loads dict"):
        ToolsetConfig(names=("x",))


def test_a_plugin_cannot_take_a_builtin_dataset_name(plugin_site):
    plugin_site("[localfin.qa_datasets]\ntatqa = fake_qa_plugin:DOUBLES\n")
    with pytest.raises(PluginError, match="registers QA dataset 'tatqa', which localfin already has"):
        dataset_names()
