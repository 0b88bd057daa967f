"""`reproduce check` on a GPU install: each missing piece (the OCR package, a C compiler and the
Python headers for triton) named with the step that supplies it on the GPU side."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.reproduce import check
from agent.reproduce.spec import load_repro
from serving.hardware import gpu_install


def test_triton_pieces_are_checked_on_the_cuda_build_only(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cfg = load_repro("finacumen_table1")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("CC", raising=False)
    items = {i.what: i for i in check.install_items(cfg, platform="cuda")}
    cc = items["GPU install: C compiler (triton)"]
    assert (
        cc.status == "missing" and cc.fix == "apt-get install -y build-essential (or set CC to a C compiler)"
    )
    assert cc.line().startswith(
        "MISSING finacumen_table1: GPU install: C compiler (triton): no cc, gcc or clang"
    )
    assert check.install_items(cfg, platform="cpu") == []
    fake = tmp_path / "include"
    monkeypatch.setattr(gpu_install.sysconfig, "get_paths", lambda: {"include": str(fake)})
    missing = gpu_install.headers_piece()
    assert not missing.ok and missing.fix.startswith("apt-get install -y python3.") and "-dev" in missing.fix
    fake.mkdir()
    (fake / "Python.h").write_text("/* headers */\n", encoding="utf-8")
    assert gpu_install.headers_piece().ok


def test_the_ocr_fix_names_the_step_of_the_installed_build(monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = load_repro("finacumen_table1")
    real = check.importlib.util.find_spec
    monkeypatch.setattr(
        check.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "rapidocr_onnxruntime" else real(name, *a),
    )
    monkeypatch.setattr(check.sandbox, "probe", lambda config=None: {"uid": 65534})
    for platform in ("cpu", "cuda"):
        monkeypatch.setattr(check, "engine_platform", lambda p=platform: p)
        (ocr,) = [i for i in check._tools(cfg, Path("/nonexistent")) if i.what == "tool reparse (OCR)"]
        assert ocr.status == "missing" and ocr.fix == check.OCR_FIX[platform]
    assert "pip install --no-deps rapidocr-onnxruntime==1.4.4" in check.OCR_FIX["cuda"]
