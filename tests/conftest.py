"""Session-wide test setup: offline hub, blocked network, shared data location, GPU skip."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("LOCALFIN_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))

_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _is_local(address: object) -> bool:
    if isinstance(address, (str, bytes)):  # AF_UNIX path
        return True
    if isinstance(address, tuple) and address:
        host = str(address[0])
        return host in ("localhost", "::1", "0.0.0.0", "") or host.startswith("127.")
    return False


def _guarded_connect(self: socket.socket, address: object) -> None:
    if not _is_local(address):
        raise OSError(f"network access blocked in tests: connect to {address!r}")
    return _real_connect(self, address)


def _guarded_connect_ex(self: socket.socket, address: object) -> int:
    if not _is_local(address):
        raise OSError(f"network access blocked in tests: connect to {address!r}")
    return _real_connect_ex(self, address)


# Blocked for the whole session, in this process; subprocesses get HF_HUB_OFFLINE=1 and are
# checked separately (tests/serving/test_offline.py).
socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any(item.get_closest_marker("gpu") for item in items) and not _has_cuda():
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The read-only ../shared/data folder; tests that need it skip cleanly where it is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA
