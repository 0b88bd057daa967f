"""The pinned snapshot of the FinAcumen authors' code for the tests: where it is (``../shared/vendor``
beside the repository, as the shared data are found; tests that need it skip cleanly without it)
and how a test imports one of their modules to run it beside ours (tests only: production code
never imports or runs their code). Their modules import an API client, a config file reader and
a logger at import time: those are replaced by stand-ins in ``sys.modules`` for the import and
removed after it, and no bytecode is written into the snapshot."""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
SNAPSHOT = REPO_ROOT.parent / "shared" / "vendor" / "FinAcumen-16246593c75e81fac0b57c05e739761dae3e6fe9"


def snapshot() -> Path:
    """The snapshot's folder, or a skip when this machine lacks it."""
    if not (SNAPSHOT / "finacumen").is_dir():
        pytest.skip(f"the authors' code snapshot is absent ({SNAPSHOT})")
    return SNAPSHOT


class FakeLLM:
    """Stands in for their API client class (``finacumen.ft.llm.LLM``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.calls: list[dict[str, Any]] = []


@contextlib.contextmanager
def their_modules(tmp: Path) -> Iterator[Any]:
    """Import their modules inside the block (``load("finacumen.fm.retrieve")``), with their API
    client and config reader replaced; everything of theirs leaves ``sys.modules`` after."""
    root = snapshot()
    before = set(sys.modules)
    saved_path, saved_bytecode = list(sys.path), sys.dont_write_bytecode
    llm = types.ModuleType("finacumen.ft.llm")
    llm.LLM = FakeLLM  # type: ignore[attr-defined]
    cfg = types.ModuleType("finacumen.ft.config")

    class _Config:
        llm: ClassVar[dict[str, Any]] = {}
        ocr_config = None

    cfg.config = _Config()  # type: ignore[attr-defined]
    cfg.LLMSettings = object  # type: ignore[attr-defined]
    cfg.PROJECT_ROOT = tmp  # type: ignore[attr-defined]
    cfg.WORKSPACE_ROOT = tmp  # type: ignore[attr-defined]
    sys.modules["finacumen.ft.llm"] = llm
    sys.modules["finacumen.ft.config"] = cfg
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module
    finally:
        sys.path[:] = saved_path
        sys.dont_write_bytecode = saved_bytecode
        for name in set(sys.modules) - before:
            if name == "finacumen" or name.startswith("finacumen."):
                del sys.modules[name]
