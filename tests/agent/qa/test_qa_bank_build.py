"""Bank construction: training items only, K seeded trajectories per item in one batch,
findings only from successes and cautions only from failures, resumable."""

from __future__ import annotations

import pytest
from qa_fakes import Calculator, change_items, num_scorer, qa_backend

from agent.qa.bank_build import BankBuildConfig, build_bank
from agent.qa.react import QASolver, SolverConfig
from bank.embedder import HashingEmbedder
from bank.store import ExperienceBank
from localfin.errors import ConfigError


def _solver() -> QASolver:
    return QASolver(SolverConfig(model="m"), tools=lambda q: [Calculator()])


def test_bank_is_built_from_training_items_with_k_seeded_trajectories(tmp_path):
    items = change_items(3, "train")
    backend = qa_backend()
    sizes: list[int] = []
    orig = backend.chat
    backend.chat = lambda reqs: (sizes.append(len(reqs)), orig(reqs))[1]  # type: ignore[method-assign]
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            items,
            _solver(),
            backend,
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=BankBuildConfig(k=4, temperature=0.8),
            scorer=num_scorer,
        )
        assert rep.entries_added == 3 and len(bank) == 3
        assert list(bank.sources) == [it.item_id for it in items]
        entries = bank.get([0, 1, 2])
    # every scripted trajectory is right: findings only, no cautions
    assert all(e.findings and not e.cautions for e in entries)
    assert rep.success_rate == 1.0
    # first round: 3 items x 4 plans in one batch, with seeds 0..3 and temperature 0.8
    assert sizes[0] == 12
    first = backend.calls[:12]
    assert sorted({r.seed for r in first}) == [0, 1, 2, 3] and {r.temperature for r in first} == {0.8}
    summaries = [r for r in backend.calls if r.call_type == "bank_summarize"]
    assert len(summaries) == 3 and all(
        r.json_schema["properties"]["cautions"]["maxItems"] == 0 for r in summaries
    )
    # the summariser (training time) sees the gold answer
    assert "Correct answer: 200.0" in summaries[0].messages[-1].content
    assert (tmp_path / "run" / "journal.sqlite").exists() and (tmp_path / "run" / "manifest.json").exists()


def test_failed_trajectories_give_cautions_only(tmp_path):
    items = change_items(2, "train", gold=lambda i: 123456.0)  # the scripted agent never finds it
    with ExperienceBank.open(tmp_path / "bank") as bank:
        rep = build_bank(
            items,
            _solver(),
            qa_backend(),
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=BankBuildConfig(k=2),
            scorer=num_scorer,
        )
        entries = bank.get([0, 1])
    assert rep.success_rate == 0.0
    assert all(e.cautions and not e.findings for e in entries)


def test_test_items_never_write_to_the_bank(tmp_path):
    items = change_items(2, "train") + change_items(1, "test")
    with ExperienceBank.open(tmp_path / "bank") as bank:
        with pytest.raises(ConfigError, match=r"training items only.*'test-0'"):
            build_bank(
                items, _solver(), qa_backend(), bank, HashingEmbedder(), tmp_path / "run", scorer=num_scorer
            )
        assert len(bank) == 0


def test_rerun_skips_items_already_in_the_bank(tmp_path):
    items = change_items(2, "dev")
    cfg = BankBuildConfig(k=2)
    with ExperienceBank.open(tmp_path / "bank") as bank:
        build_bank(
            items[:1],
            _solver(),
            qa_backend(),
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=cfg,
            scorer=num_scorer,
        )
        backend = qa_backend()
        rep = build_bank(
            items,
            _solver(),
            backend,
            bank,
            HashingEmbedder(),
            tmp_path / "run",
            config=cfg,
            scorer=num_scorer,
        )
        assert rep.skipped_in_bank == 1 and rep.entries_added == 1 and len(bank) == 2
        assert all(
            "segment 0" not in r.messages[-1].content for r in backend.calls if r.call_type == "qa_solve"
        )


def test_build_config_validates():
    with pytest.raises(ConfigError, match="temperature"):
        BankBuildConfig(temperature=0.0)
    with pytest.raises(ConfigError, match="k=0"):
        BankBuildConfig(k=0)
