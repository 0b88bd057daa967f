"""torchvision in the venv (serving/torchvision_cpu.py): every fresh interpreter can import it,
its transforms work, and where its C++ extension cannot load beside the CPU torch (PyPI's CUDA
build) the import works only because of the hook, while its C++ ops still refuse to run."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torchvision")

_UNHOOKED = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Finder"]
import torchvision
"""


def test_torchvision_imports_through_the_hook_and_its_transforms_work() -> None:
    """This process started like every process of the venv (the .pth ran); the part that needs
    a fresh interpreter is the import without the hook."""
    import torch
    import torchvision
    from torchvision.transforms.v2 import functional as tvf

    from serving.torchvision_cpu import _Finder, define_missing_op_schemas

    assert any(isinstance(f, _Finder) for f in sys.meta_path), (
        "the venv's localfin-torchvision-cpu.pth is missing: rerun `make install`"
    )
    assert list(tvf.resize(torch.rand(3, 20, 30), [10, 15]).shape) == [3, 10, 15]
    assert define_missing_op_schemas() == []  # already done (or not needed): nothing twice
    unhooked = subprocess.run([sys.executable, "-c", _UNHOOKED], capture_output=True, text=True, timeout=300)
    if torchvision.extension._has_ops():  # a torchvision whose extension loads (+cpu, GPU)
        assert unhooked.returncode == 0, unhooked.stderr[-2000:]
        return
    # PyPI's CUDA build beside the CPU wheel: the hook is what lets it import, and the C++ ops
    # it could not load still refuse to run
    assert unhooked.returncode != 0 and "torchvision::nms does not exist" in unhooked.stderr
    with pytest.raises(RuntimeError, match="Couldn't load custom C"):
        torchvision.ops.nms(torch.rand(2, 4), torch.rand(2), 0.5)
