"""The sandbox that runs model-written Python for FinAcumen's Python tool.

:class:`SandboxSession` keeps one bubblewrap-isolated worker per question (state kept between
calls); :class:`SandboxConfig` holds its limits; :class:`SandboxUnavailable` is raised wherever
no isolation is available (model code is then refused, never run unisolated). How the worker is
isolated is described in :mod:`agent.qa.sandbox.launch`, what it does in
:mod:`agent.qa.sandbox._worker`.
"""

from __future__ import annotations

from agent.qa.sandbox.config import SANDBOX_PACKAGES, SandboxConfig, SandboxUnavailable
from agent.qa.sandbox.session import ExecResult, SandboxSession, probe

__all__ = ["SandboxConfig", "SandboxUnavailable", "SandboxSession", "ExecResult", "probe", "SANDBOX_PACKAGES"]
