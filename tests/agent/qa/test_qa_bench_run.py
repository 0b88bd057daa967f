"""bench.agents.runs.finacumen_run, the `localfin bench agent` contract: units are questions, the
journal holds every call, lock-step batches the questions' calls and sequential sends them one
question at a time, bad arguments are ConfigErrors naming the parameter."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from qa_fakes import final, scripted_solver

from bench.agents.runs import QA_MAX_SIZE as BENCH_MAX_SIZE
from bench.agents.runs import finacumen_run as bench_run
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult
from serving.journal import Journal
from serving.models.registry import default_registry


class _Batches:
    """Records the size of every batch the evaluation sends."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.sizes: list[int] = []

    def chat(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        self.sizes.append(len(requests))
        return self.inner.chat(requests)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("mode", ["lockstep", "sequential"])
def test_bench_run_contract(tmp_path: Path, mode: str) -> None:
    backend = _Batches(scripted_solver([final("12.5")]))
    run = bench_run("vllm", "smollm2-135m", mode, 3, tmp_path, backend=backend, registry=default_registry())
    assert run.units == 3 and run.summary.n == 3 and run.wall_s >= 0
    assert Path(run.journal_path).is_file()
    with Journal(run.journal_path) as journal:
        rows = journal.token_summary()
    calls = sum(r.calls for r in rows)
    assert calls == sum(backend.sizes) == run.summary.model_calls > 0
    assert {r.call_type for r in rows} == {"qa_solve"}
    # every question's calls: lock-step sends the 3 questions' calls together, sequential one by one
    if mode == "lockstep":
        assert max(backend.sizes) == 3
    else:
        assert max(backend.sizes) == 1
    # only text questions (no OCR in the timed part), the ft variant with the Python tool
    assert run.summary.variant == "ft"


def test_bench_run_modes_send_the_same_calls(tmp_path: Path) -> None:
    reg = default_registry()
    got = {}
    for mode in ("lockstep", "sequential"):
        b = _Batches(scripted_solver([final("1")]))
        run = bench_run("vllm", "smollm2-135m", mode, 2, tmp_path / mode, backend=b, registry=reg)
        with Journal(run.journal_path) as journal:
            got[mode] = [(r.call_type, r.calls, r.prompt_tokens) for r in journal.token_summary()]
    assert got["lockstep"] == got["sequential"]


@pytest.mark.parametrize(
    "kind, mode, size, match",
    [
        ("openai", "lockstep", 1, "backend_kind='openai'; allowed: vllm"),
        ("vllm", "batched", 1, "mode='batched'; allowed: lockstep, sequential"),
        ("vllm", "lockstep", 0, f"size=0; allowed: 1..{BENCH_MAX_SIZE}"),
        ("vllm", "lockstep", BENCH_MAX_SIZE + 1, "size=41"),
    ],
)
def test_bench_run_bad_arguments(tmp_path: Path, kind: str, mode: str, size: int, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        bench_run(kind, "smollm2-135m", mode, size, tmp_path, backend=scripted_solver([final("1")]))
    assert not (tmp_path / "runs").exists()
