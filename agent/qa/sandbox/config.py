"""Limits of the Python sandbox, in one frozen value, and the sandbox's errors."""

from __future__ import annotations

import math
from dataclasses import dataclass

from localfin.errors import ConfigError, LocalfinError

__all__ = ["SandboxConfig", "SandboxUnavailable", "SANDBOX_PACKAGES", "MAX_ERROR_CHARS", "reply_bytes"]

#: Longest error text (traceback) one reply carries, in characters.
MAX_ERROR_CHARS = 3000
#: Bytes of UTF-8 JSON one character of a reply's text can take at most (``\u00XX`` for a
#: control character; the worker writes every other character as itself: 1 to 4 bytes).
_JSON_BYTES_PER_CHAR = 6

#: Import packages bound read-only into the sandbox by default: numpy and pandas for financial
#: arithmetic, and what ``import pandas`` needs (dateutil, tzdata). Only these directories of
#: the venv's site-packages are visible inside (plus ``<name>.libs`` beside them, where wheels
#: keep their bundled shared libraries, e.g. numpy's OpenBLAS).
SANDBOX_PACKAGES: tuple[str, ...] = ("numpy", "pandas", "dateutil", "tzdata")


class SandboxUnavailable(LocalfinError):
    """No OS isolation is available here (bubblewrap or user namespaces missing, a helper
    program missing, or the started sandbox failed its own isolation check). Model code is
    then never run: the Python tool refuses instead of falling back to running it unisolated."""


@dataclass(frozen=True)
class SandboxConfig:
    """Resource limits of one sandboxed Python worker (one per question).

    Attributes:
        cpu_seconds: CPU seconds one call may use (a profiling timer in the worker: the call
            is interrupted with a ``timeout`` error and the worker keeps its state).
        wall_seconds: wall-clock seconds one call may take before the worker is killed (state
            lost, restarted on the next call). Catches sleeps and blocking calls.
        worker_cpu_seconds: CPU seconds one worker may use over its whole life (``RLIMIT_CPU``:
            the kernel ends it beyond that, whatever the code does to the per-call timer).
        memory_mb: address-space limit of the worker in MiB (``RLIMIT_AS``); an allocation
            beyond it raises ``MemoryError`` in the model's code.
        max_processes: processes or threads the code may start besides the worker (the
            ``RLIMIT_NPROC`` limit is set to those present at start plus this). 0 forbids
            ``fork``, ``subprocess`` and threads alike.
        max_output_chars: characters of printed output (and of the last value's ``repr``) one
            call may produce; printing more stops the call with an ``output_limit`` error.
        max_code_chars: longest code string accepted from the model.
        tmp_mb: size in MiB of the worker's private, memory-backed ``/tmp`` (its only writable
            folder, also its working directory and ``HOME``).
        max_file_mb: largest file the code may write, in MiB (``RLIMIT_FSIZE``; it also bounds
            each anonymous ``memfd`` file, which no folder size limits).
        max_open_files: open file descriptors of the worker (``RLIMIT_NOFILE``). With the
            limits above, the memory one worker can hold is at most about ``memory_mb +
            tmp_mb + max_open_files * max_file_mb`` MiB (defaults: 1024 + 64 + 32 * 16).
        startup_seconds: wall-clock seconds allowed for a worker to start and report ready.
        packages: import packages of the venv bound read-only into the sandbox.
        sandbox_uid: the unprivileged uid (and gid) the worker runs as when localfin itself
            runs as root (default 65534, ``nobody``); ignored for a normal user, who is kept.
    """

    cpu_seconds: float = 5.0
    wall_seconds: float = 15.0
    worker_cpu_seconds: int = 120
    memory_mb: int = 1024
    max_processes: int = 0
    max_output_chars: int = 20_000
    max_code_chars: int = 20_000
    tmp_mb: int = 64
    max_file_mb: int = 16
    max_open_files: int = 32
    startup_seconds: float = 30.0
    packages: tuple[str, ...] = SANDBOX_PACKAGES
    sandbox_uid: int = 65534

    def __post_init__(self) -> None:
        _check_float("cpu_seconds", self.cpu_seconds, 0.05, 3600.0)
        _check_float("wall_seconds", self.wall_seconds, 0.1, 3600.0)
        _check_int("worker_cpu_seconds", self.worker_cpu_seconds, math.ceil(self.cpu_seconds), 86_400)
        _check_int("memory_mb", self.memory_mb, 128, 1 << 20)
        _check_int("max_processes", self.max_processes, 0, 256)
        _check_int("max_output_chars", self.max_output_chars, 100, 10_000_000)
        _check_int("max_code_chars", self.max_code_chars, 1, 1_000_000)
        _check_int("tmp_mb", self.tmp_mb, 1, 1 << 16)
        _check_int("max_file_mb", self.max_file_mb, 1, 1 << 16)
        _check_int("max_open_files", self.max_open_files, 16, 65_536)
        _check_float("startup_seconds", self.startup_seconds, 0.5, 600.0)
        _check_int("sandbox_uid", self.sandbox_uid, 1, (1 << 32) - 2)
        if not isinstance(self.packages, tuple) or not all(
            isinstance(p, str) and p.isidentifier() for p in self.packages
        ):
            raise ConfigError(
                f"SandboxConfig.packages must be a tuple of import names (identifiers), got {self.packages!r}"
            )


def reply_bytes(config: SandboxConfig) -> int:
    """The most bytes a well-formed reply of one call can have: printed output and the value's
    ``repr`` (each at most ``max_output_chars``, the value plus a short "chars cut" note), the
    error text, the nonce and the fixed fields. The host refuses a longer announced reply."""
    chars = 2 * config.max_output_chars + MAX_ERROR_CHARS + 256
    return _JSON_BYTES_PER_CHAR * chars + 4096


def _check_int(name: str, value: object, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"SandboxConfig.{name} must be an integer in [{lo}, {hi}], got {value!r}")


def _check_float(name: str, value: object, lo: float, hi: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= float(value) <= hi:
        raise ConfigError(f"SandboxConfig.{name} must be a number in [{lo}, {hi}], got {value!r}")
