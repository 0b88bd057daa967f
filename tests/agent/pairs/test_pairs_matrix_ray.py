"""The matrix through Ray (``--ray``) on a local Ray instance started by the test: one task per
experiment and seed, each with its own journal; gathered into the same experiment folders as
the local path, with the same runs, steps, summary rows and journaled calls. The scripted model
in the default suite; a real ``vllm serve`` on loopback with the tiny model under ``slow``."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from matrix_support import matrix_text, openai_factory, scripted_factory
from moira_support import small_store

from agent.pairs.experiment.matrix import run_matrix
from agent.pairs.experiment.matrix_config import load_matrix
from agent.pairs.experiment.matrix_ray import TASKS_DIR, merge_journal
from agent.pairs.market.records import read_json
from agent.report.matrix_summary import write_matrix_summary
from localfin.errors import ConfigError

ray = pytest.importorskip("ray")


@pytest.fixture()
def local_ray(monkeypatch):
    """A local Ray instance on loopback for one test (workers can import the test helpers)."""
    import matrix_support
    import moira_support

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # no token written under ~/.ray
    for mod in (matrix_support, moira_support):
        ray.cloudpickle.register_pickle_by_value(mod)  # Ray's own cloudpickle ships them
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=200 * 1024 * 1024,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    yield
    ray.shutdown()
    for mod in (matrix_support, moira_support):
        ray.cloudpickle.unregister_pickle_by_value(mod)


def _runs(out: Path) -> dict[str, tuple]:
    return {
        str(m.parent.relative_to(out)): (read_json(m), pd.read_parquet(m.parent / "steps.parquet"))
        for m in sorted(out.glob("*/*/runs/*/metrics.json"))
    }


def _keys(journal: Path) -> set[str]:
    with sqlite3.connect(journal) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


def _assert_same(local: Path, other: Path) -> None:
    a, b = _runs(local), _runs(other)
    assert list(a) == list(b) and a
    for k, (m, steps) in a.items():
        assert b[k][0] == m, k
        pd.testing.assert_frame_equal(steps, b[k][1])
    assert read_json(local / "summary.json")["settings"] == read_json(other / "summary.json")["settings"]
    for j in sorted(local.glob("*/*/journal.sqlite")):
        assert _keys(j) == _keys(other / j.relative_to(local)), j


def test_ray_path_equals_the_local_path_on_the_scripted_model(tmp_path, local_ray):
    config = tmp_path / "m.toml"
    # one exposure: 8 tasks (2 backbones x 2 windows x 2 seeds) of one run each
    config.write_text(matrix_text(small_store(), tmp_path / "no-weights", exposures=("beta",)))
    cfg, text = load_matrix(config), config.read_text()
    run_matrix(
        cfg,
        tmp_path / "local",
        config_text=text,
        backend_factory=scripted_factory,
        summary=write_matrix_summary,
    )
    res = run_matrix(
        cfg,
        tmp_path / "ray",
        config_text=text,
        backend_factory=scripted_factory,
        summary=write_matrix_summary,
        ray_address="local",
    )
    assert res.mode == "ray" and all(c.status == "ran on ray" for c in res.cells)
    _assert_same(tmp_path / "local", tmp_path / "ray")
    # one task folder (own journal) per experiment and seed; hidden from the report
    tasks = sorted(
        p.relative_to(tmp_path / "ray" / TASKS_DIR) for p in (tmp_path / "ray" / TASKS_DIR).glob("*/*/s*")
    )
    assert [str(p) for p in tasks] == [
        f"{b}/{w}/s{s}" for b in ("smol", "tiny") for w in ("later", "main") for s in (0, 1)
    ]
    assert read_json(tmp_path / "ray" / "manifest.json")["mode"] == "ray"
    # the gathered experiment replays with no model call (as `pairs run --resume` would)
    again = run_matrix(
        cfg,
        tmp_path / "ray",
        config_text=text,
        backend_factory=scripted_factory,
        summary=write_matrix_summary,
        ray_address="local",
        resume=True,
    )
    assert all(c.status == "done before" for c in again.cells)


def test_merge_journal_adds_missing_rows_once(tmp_path):
    from serving.chat.types import ChatRequest, ChatResult, Message, Usage
    from serving.journal import Journal

    def put(path: Path, text: str) -> None:
        req = ChatRequest(model="m", messages=(Message("user", text),), max_tokens=16, call_type="direction")
        res = ChatResult(
            text="{}",
            reasoning=None,
            parsed={},
            parse_error=None,
            finish_reason="stop",
            usage=Usage(1, 1),
            latency_s=0.1,
            backend="b",
            model="m",
            revision="r",
            call_type="direction",
            request_key=req.key(),
        )
        with Journal(path) as j:
            j.put_many([(req, res)])

    put(tmp_path / "a.sqlite", "one")
    put(tmp_path / "b.sqlite", "one")
    put(tmp_path / "b.sqlite", "two")
    assert merge_journal(tmp_path / "dst.sqlite", tmp_path / "a.sqlite") == 1
    assert merge_journal(tmp_path / "dst.sqlite", tmp_path / "b.sqlite") == 1
    assert merge_journal(tmp_path / "dst.sqlite", tmp_path / "b.sqlite") == 0
    assert _keys(tmp_path / "dst.sqlite") == _keys(tmp_path / "b.sqlite")


def test_ray_path_needs_a_server_for_each_backbone(tmp_path, monkeypatch):
    # on a local instance every task runs here: no server named, none of this machine's
    monkeypatch.delenv("LOCALFIN_ENDPOINTS", raising=False)
    config = tmp_path / "m.toml"
    config.write_text(matrix_text(small_store(), tmp_path / "no-weights"))
    with pytest.raises(
        ConfigError, match=r"no server for model 'smollm2-135m' on node this machine \(--ray local\)"
    ):
        run_matrix(load_matrix(config), tmp_path / "o", config_text=config.read_text(), ray_address="local")


@pytest.mark.slow
def test_ray_path_on_a_real_vllm_server_equals_the_local_path(
    tmp_path, openai_server, tiny_model_dir, local_ray
):
    """The tiny Qwen3 behind `vllm serve` on loopback, greedy; both backbone entries use that
    server (the tiny model twice, thinking off and on)."""
    base = matrix_text(small_store(), tiny_model_dir)
    text = base.replace(
        'key = "smollm2-135m"\nname = "smol"',
        f'key = "tiny-qwen3"\nname = "smol"\nmodel_path = "{tiny_model_dir}"',
    )
    text = text.replace(
        "[model]\n", f'[model]\nbackend = "openai"\nbase_url = "{openai_server.base_url}"\n', 1
    )
    text += (
        "\n[prompt]\nreason_max_chars = 40\nreflection_max_chars = 60\nprinciple_max_chars = 60\n"
        "description_max_chars = 0\nnews_per_leg = 1\nreflection_max_records = 6\n"
    )
    text = text.replace("[screen]\n", "[screen]\ntop_k = 3\n", 1)
    config = tmp_path / "m.toml"
    config.write_text(text)
    cfg = load_matrix(config)
    factory = functools.partial(openai_factory, base_url=openai_server.base_url, api_key="test-key")
    local = run_matrix(
        cfg, tmp_path / "local", config_text=text, backend_factory=factory, summary=write_matrix_summary
    )
    assert sum(c.model_calls for c in local.cells) > 0
    res = run_matrix(
        cfg,
        tmp_path / "ray",
        config_text=text,
        backend_factory=factory,
        summary=write_matrix_summary,
        ray_address="local",
    )
    assert sum(c.model_calls for c in res.cells) > 0
    _assert_same(tmp_path / "local", tmp_path / "ray")
