"""``[qa] protocol``: one switch sets a named group of keys, a key the table sets keeps its own
value, arms re-derive the group for another protocol, and what reads the gold is said."""

from __future__ import annotations

import dataclasses

import pytest

from agent.reproduce.qa.plan import QAPlan
from agent.reproduce.qa.protocols import PROTOCOL_KEYS, protocol_values
from agent.reproduce.qa.setup import reads_gold_lines
from agent.reproduce.spec import load_repro
from localfin.errors import ConfigError


def test_the_paper_protocol_is_the_plans_defaults_and_both_protocols_set_the_same_keys() -> None:
    defaults = {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(QAPlan)
        if f.name in PROTOCOL_KEYS
    }
    assert defaults == dict(protocol_values("paper"))
    assert set(protocol_values("authors")) == set(PROTOCOL_KEYS)
    differ = {k for k in PROTOCOL_KEYS if protocol_values("paper")[k] != protocol_values("authors")[k]}
    assert differ == set(PROTOCOL_KEYS)  # every key of the group is a point where they differ


def test_the_authors_table1_takes_the_authors_values_and_keeps_its_own_keys() -> None:
    paper, authors = load_repro("finacumen_table1").qa, load_repro("finacumen_table1_authors").qa
    assert paper.protocol == "paper" and authors.protocol == "authors"
    assert paper.k_max == (5,) and authors.k_max == (3,)
    assert (authors.gold_format_hints, authors.gold_evidence) == ("authors", "authors")
    assert (authors.memory_block, authors.annotator, authors.ocr) == ("authors", False, "model")
    points = (authors.loop, authors.base, authors.answer_reading, authors.base_max_tokens)
    assert points == ("authors", "authors", "authors", 1024)
    assert (authors.temperature, authors.base_temperature) == (0.6, 0.0)
    assert {authors.scorer_of(d).name for d in ("bizbench", "finmmr", "fintmmbench")} == {"authors"}
    assert authors.thought_chars == paper.thought_chars == 1000  # set in both files: ours
    assert authors.sets == paper.sets and authors.bank == paper.bank
    assert paper.reads_gold == () and authors.reads_gold == ("gold_format_hints", "gold_evidence")


def _table(tmp_path, extra: str):
    text = load_repro("finacumen_table2").source.read_text(encoding="utf-8")
    f = tmp_path / "c.toml"
    f.write_text(text.replace('backend = "vllm"', 'backend = "vllm"\n' + extra, 1), encoding="utf-8")
    return f


def test_a_key_set_in_the_table_wins_over_its_protocol(tmp_path) -> None:
    text = load_repro("finacumen_table2").source.read_text(encoding="utf-8")
    f = tmp_path / "c.toml"
    f.write_text(text.replace("k_max = [5]", 'k_max = [5]\nprotocol = "authors"', 1), encoding="utf-8")
    cfg = load_repro(f)
    assert cfg.qa.protocol == "authors" and cfg.qa.k_max == (5,)  # set in the file
    assert cfg.qa.gate_rejections == 16 and cfg.qa.observation_chars == 8000  # set in the file too
    assert cfg.qa.memory_block == "authors" and cfg.qa.tools == ("python", "lookup", "reparse", "retrieve")
    with pytest.raises(ConfigError, match=r"qa\.protocol='theirs'; allowed: paper, authors"):
        load_repro(_table(tmp_path, 'protocol = "theirs"'))


def test_unbounded_lessons_need_a_summary_budget(tmp_path) -> None:
    with pytest.raises(ConfigError, match="summary_max_tokens"):
        load_repro(_table(tmp_path, "lesson_chars = 0"))
    cfg = load_repro(_table(tmp_path, "lesson_chars = 0\nsummary_max_tokens = 8192"))
    assert cfg.qa.lesson_chars == 0


def test_the_leak_ablations_arms() -> None:
    cfg = load_repro("finacumen_leak_ablation")
    arms = {a.name: p for a, p in cfg.qa_arms()}
    assert list(arms) == ["authors", "hints_format", "no_hints", "no_hints_no_evidence", "paper"]
    assert [arms[n].reads_gold for n in arms] == [
        ("gold_format_hints", "gold_evidence"), ("gold_format_hints", "gold_evidence"),
        ("gold_evidence",), (), (),
    ]  # fmt: skip
    assert arms["hints_format"].gold_format_hints == "format"
    # the paper arm takes the paper's values for the group the [qa] table leaves unset
    p = arms["paper"]
    assert (p.protocol, p.k_max, p.memory_block, p.temperature) == ("paper", (5,), "directives", None)
    # every arm is scored by the authors' scorers (set in the [qa] table): only the protocol moves
    assert all(ap.scorer_of("fintmmbench").name == "authors" for ap in arms.values())
    assert p.tools == ("python", "lookup", "reparse", "retrieve") and p.store == "market.sqlite"
    banks = {a.name: a.bank_of for a in cfg.qa.arms}
    assert banks == {"authors": "", "hints_format": "authors", "no_hints": "authors",
                     "no_hints_no_evidence": "authors", "paper": ""}  # fmt: skip
    matched = {dict(f.match).get("arm") for f in cfg.figures}
    assert matched == {"authors"}  # Table 1's Base and FinAcumen beside the authors' arm


def test_arms_are_checked(tmp_path) -> None:
    arm = '\n[[qa.arms]]\nname = "a"\n\n[[qa.arms]]\nname = "b"\nbank_of = "c"\n'
    text = load_repro("finacumen_table2").source.read_text(encoding="utf-8")
    f = tmp_path / "c.toml"
    f.write_text(text.replace("[[qa.bank]]", arm + "\n[[qa.bank]]", 1), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"bank_of='c'; allowed: the name of an arm before it \(a\)"):
        load_repro(f)
    f.write_text(
        text.replace("[[qa.bank]]", '[[qa.arms]]\nname = "a"\nset = { k_max = "x" }\n\n[[qa.bank]]', 1)
    )
    with pytest.raises(ConfigError, match=r"qa\.arms\.a\.k_max"):
        load_repro(f).qa_arms()


def test_what_reads_the_gold_is_said_line_by_line() -> None:
    authors = load_repro("finacumen_table1_authors").qa
    lines = reads_gold_lines(authors)
    assert len(lines) == 2 and all(x.startswith("reads_gold: qa.gold_") for x in lines)
    assert "the rounding instruction's example is the gold number itself" in lines[0]
    assert "Base included" in lines[1]
    assert reads_gold_lines(load_repro("finacumen_table1").qa) == [
        "reads_gold: none (nothing reads the gold answer or gold evidence at test time)"
    ]


def test_the_report_names_each_rows_protocol_and_what_reads_the_gold(tmp_path) -> None:
    import json

    from agent.reproduce.report import write_report

    cfg = load_repro("finacumen_leak_ablation")
    rows = [
        {"arm": "authors", "set": "BizBench SEC-NUM", "variant": "ft_fm", "protocol": "authors",
         "accuracy_pct": 70.0},
        {"arm": "paper", "set": "BizBench SEC-NUM", "variant": "ft_fm", "protocol": "paper",
         "accuracy_pct": 50.0},
    ]  # fmt: skip
    gold = reads_gold_lines(cfg.qa, arm="authors")
    md = write_report(cfg, tmp_path, rows, mode="full", reads_gold=gold).read_text(encoding="utf-8")
    assert (
        "## What reads the gold at test time" in md and "reads_gold (arm authors): qa.gold_format_hints" in md
    )
    doc = json.loads((tmp_path / "reproduction.json").read_text(encoding="utf-8"))
    mine = [f for f in doc["paper_vs_ours"] if f["column"] == "BizBench SEC-NUM" and f["ours"] is not None]
    assert [(f["ours"], f["our protocol"]) for f in mine] == [(70.0, "authors (arm authors)")]
    assert doc["reads_gold"] == gold
    # the HTML report of the folder shows the same, the reads_gold lines first and marked
    from agent.report.build import build_report

    html = build_report(tmp_path).html.read_text(encoding="utf-8")
    assert '<li class="warn">reads_gold (arm authors): qa.gold_format_hints' in html
    assert "authors (arm authors)" in html and "<th>our protocol</th>" in html


def test_the_plans_solver_keys_reach_the_solver_and_unset_ones_keep_the_models_defaults() -> None:
    from dataclasses import replace

    from agent.qa.solver.gate import GateConfig
    from agent.reproduce.qa.setup import solver_settings

    plan = load_repro("finacumen_table1_authors").qa
    cfg = solver_settings(plan, None)
    assert (cfg.sampling.temperature, cfg.base_temperature, cfg.observation_chars) == (0.6, 0.0, 4000)
    assert cfg.gate_rejections == 0 and cfg.plan_chars == 600 and cfg.answer_chars == 200  # defaults
    tuned = replace(
        plan, plan_chars=900, seed=7, max_prompt_chars=20_000, gate=GateConfig(free_integer_max=3)
    )
    cfg = solver_settings(tuned, None)
    assert (cfg.plan_chars, cfg.sampling.seed, cfg.max_prompt_chars, cfg.gate.free_integer_max) == (
        900,
        7,
        20_000,
        3,
    )


def test_the_corpus_tool_is_offered_to_every_question_under_the_authors_scope(tmp_path) -> None:
    import json

    from agent.qa.core.items import Question
    from agent.qa.solver.toolset import ToolsetConfig, tool_factory

    data = tmp_path / "fintmm" / "data"
    data.mkdir(parents=True)
    rows = [{"uuid": "n1", "Company": "AMD", "Symbol": "AMD", "Date": "2022-03-08", "content": "AMD rose."}]
    (data / "News.json").write_text(json.dumps(rows), encoding="utf-8")
    q = Question("b-1", "bizbench", "What was revenue?")
    make = {s: tool_factory(ToolsetConfig(names=("retrieve",), corpus_path=data.parent, corpus_scope=s))
            for s in ("own", "all")}  # fmt: skip
    names = {scope: [t.name for t in m(q)] for scope, m in make.items()}
    assert names == {"own": [], "all": ["retrieve"]}
