"""Kill -9 a matrix twice (once on each backbone's engine, at seeded points of the call
sequence), resume: every run's metrics and steps, and the matrix summary rows (the report's
results tables), equal those of an uninterrupted matrix, and no call that reached a journal is
sent to the model again. The kill is gated by a marker file written inside the N-th engine call
(the worker then blocks), never by timing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matrix_support import matrix_text
from moira_support import kill_at_gate, small_store

from agent.pairs.market.records import read_json

HERE = Path(__file__).resolve().parent
WORKER = HERE / "_matrix_kill_worker.py"


def _worker(config: Path, out: Path, gate: int, marker: Path, log: Path, url: str = "") -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(config), str(out), str(gate), str(marker), str(log), url],
        env=dict(os.environ, PYTHONUNBUFFERED="1"),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _runs(out: Path) -> dict[str, tuple]:
    return {
        str(m.parent.relative_to(out)): (read_json(m), pd.read_parquet(m.parent / "steps.parquet"))
        for m in sorted(out.glob("*/*/runs/*/metrics.json"))
    }


def test_matrix_killed_twice_resumes_to_the_uninterrupted_result(tmp_path):
    config = tmp_path / "m.toml"
    # one exposure (8 runs on two engines): the kill points fall inside each engine's calls
    config.write_text(matrix_text(small_store(), tmp_path / "no-weights", exposures=("beta",)))
    _kill_twice_and_compare(tmp_path, config, "", n_runs=16)  # 4 experiments x (2 agent + 2 baseline runs)


@pytest.mark.slow
def test_matrix_on_a_real_server_killed_twice_resumes_to_the_uninterrupted_result(
    tmp_path, openai_server, tiny_model_dir
):
    """The tiny Qwen3 behind `vllm serve` on loopback (greedy) for both backbone entries."""
    text = matrix_text(small_store(), tiny_model_dir).replace(
        'key = "smollm2-135m"\nname = "smol"',
        # another engine setting, so the two entries are two engines as in the scripted test
        f'key = "tiny-qwen3"\nname = "smol"\nmodel_path = "{tiny_model_dir}"\nmax_num_seqs = 32',
    )
    text += (
        "\n[prompt]\nreason_max_chars = 40\nreflection_max_chars = 60\nprinciple_max_chars = 60\n"
        "description_max_chars = 0\nnews_per_leg = 1\nreflection_max_records = 6\n"
    )
    config = tmp_path / "m.toml"
    config.write_text(text.replace("[screen]\n", "[screen]\ntop_k = 3\n", 1))
    _kill_twice_and_compare(tmp_path, config, openai_server.base_url, n_runs=32)  # 16 agent, 16 baseline runs


def _kill_twice_and_compare(tmp_path: Path, config: Path, url: str, *, n_runs: int) -> None:
    marker = tmp_path / "marker"
    import _matrix_kill_worker

    ref_log = tmp_path / "ref.log"
    _matrix_kill_worker.main(str(config), str(tmp_path / "ref"), 0, str(marker), str(ref_log), url)
    calls = ref_log.read_text().splitlines()
    n = len(calls)
    # engine calls made before the second backbone's engine started
    first_tiny = int(Path(str(ref_log) + ".engines").read_text().split()[1])
    rng = np.random.default_rng(11)
    k1 = int(rng.integers(1, first_tiny))  # inside the first engine's calls
    k2 = int(rng.integers(first_tiny + 1, n - 1))  # inside the second engine's calls
    log = tmp_path / "sent.log"
    out = tmp_path / "exp"
    kill_at_gate(_worker(config, out, k1 + 1, marker, log, url), marker)
    sent_first = len(log.read_text().splitlines())
    kill_at_gate(_worker(config, out, k2 - sent_first + 1, marker, log, url), marker)
    proc = _worker(config, out, 0, marker, log, url)
    assert proc.wait() == 0, proc.stderr.read().decode()[-2000:]

    sent = log.read_text().split()
    assert len(sent) == len(set(sent))  # nothing journaled was asked again
    assert set(sent) == set(ref_log.read_text().split())
    ref, got = _runs(tmp_path / "ref"), _runs(out)
    assert list(ref) == list(got) and len(ref) == n_runs
    for k, (m, steps) in ref.items():
        assert got[k][0] == m
        pd.testing.assert_frame_equal(steps, got[k][1])
    assert (
        read_json(out / "summary.json")["settings"]
        == read_json(tmp_path / "ref" / "summary.json")["settings"]
    )
    manifest = read_json(out / "manifest.json")
    assert manifest["journal_calls"] == read_json(tmp_path / "ref" / "manifest.json")["journal_calls"]
