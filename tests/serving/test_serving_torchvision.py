"""torchvision in the venv (serving/torchvision_cpu.py): every fresh interpreter can import it,
its transforms work, and where its C++ extension cannot load beside the CPU torch (PyPI's CUDA
build) the import works only because of the hook, while its C++ ops still refuse to run."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("torchvision")

_PROBE = """
import json, sys
import torch, torchvision
from torchvision.transforms.v2 import functional as F
from serving.torchvision_cpu import _Finder
out = {
    "hooked": any(isinstance(f, _Finder) for f in sys.meta_path),
    "has_ops": torchvision.extension._has_ops(),
    "resized": list(F.resize(torch.rand(3, 20, 30), [10, 15]).shape),
}
try:
    torchvision.ops.nms(torch.rand(2, 4), torch.rand(2), 0.5)
    out["nms"] = "ran"
except RuntimeError as exc:
    out["nms"] = str(exc)[:60]
print(json.dumps(out))
"""

_UNHOOKED = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Finder"]
import torchvision
"""


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)


def test_a_fresh_interpreter_imports_torchvision_and_its_transforms_work() -> None:
    probe = _python(_PROBE)
    assert probe.returncode == 0, probe.stderr[-2000:]
    out = json.loads(probe.stdout.strip().splitlines()[-1])
    assert out["hooked"], "the venv's localfin-torchvision-cpu.pth is missing: rerun `make install`"
    assert out["resized"] == [3, 10, 15]
    unhooked = _python(_UNHOOKED)
    if out["has_ops"]:  # a torchvision whose extension loads (a +cpu build, a GPU machine)
        assert out["nms"] == "ran" and unhooked.returncode == 0, unhooked.stderr[-2000:]
    else:  # PyPI's CUDA build beside the CPU wheel: the hook is what lets it import
        assert out["nms"].startswith("Couldn't load custom C++ ops")
        assert unhooked.returncode != 0 and "torchvision::nms does not exist" in unhooked.stderr


def test_the_hook_defines_nothing_once_the_ops_exist() -> None:
    import torchvision  # noqa: F401  (imported through the hook in this process too)

    from serving.torchvision_cpu import define_missing_op_schemas

    assert define_missing_op_schemas() == []
