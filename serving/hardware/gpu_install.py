"""What a GPU install of vLLM needs beyond ``pip install -e '.[gpu]'``, checked without
starting anything: triton (vLLM's kernels on CUDA) compiles a small launcher with the system's
C compiler the first time it runs, against the Python headers, so an install that lacks either
fails at the first engine start, minutes into a run. Each :class:`Piece` names the GPU-side
command that supplies it (Debian/Ubuntu; ``make install-gpu`` checks the same).
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from localfin import env

__all__ = [
    "MIN_DRIVER",
    "Piece",
    "compiler_piece",
    "cxx_piece",
    "headers_piece",
    "driver_piece",
    "triton_pieces",
    "gpu_pieces",
]

#: The oldest NVIDIA driver the CUDA 13 build of torch (the ``gpu`` extra's) runs on.
MIN_DRIVER = 580


@dataclass(frozen=True)
class Piece:
    """One thing the install needs: present or not, what was found, and the command that
    supplies it."""

    what: str
    ok: bool
    detail: str
    fix: str = ""


def compiler_piece() -> Piece:
    """A C compiler on ``PATH`` (``CC``, ``cc`` or ``gcc``: what triton calls)."""
    names = [env.c_compiler(), "cc", "gcc", "clang"]
    found = next((shutil.which(n) for n in names if n and shutil.which(n)), None)
    if found:
        return Piece("C compiler (triton)", True, found)
    return Piece(
        "C compiler (triton)",
        False,
        "no cc, gcc or clang on PATH: triton compiles its CUDA launcher with one at the first engine start",
        "apt-get install -y build-essential (or set CC to a C compiler)",
    )


def headers_piece() -> Piece:
    """``Python.h`` of this interpreter (triton's launcher includes it)."""
    include = Path(sysconfig.get_paths()["include"])
    header = include / "Python.h"
    if header.is_file():
        return Piece("Python headers (triton)", True, str(header))
    ver = f"{sys.version_info.major}.{sys.version_info.minor}"
    return Piece(
        "Python headers (triton)",
        False,
        f"no Python.h in {include}: triton's launcher is compiled against it",
        f"apt-get install -y python{ver}-dev (the headers of the Python that runs localfin)",
    )


def triton_pieces() -> list[Piece]:
    """The pieces triton needs on a GPU machine."""
    return [compiler_piece(), headers_piece()]


def cxx_piece() -> Piece:
    """A C++ compiler (``CXX``, ``c++``, ``g++`` or ``clang++``): ``hnswlib`` (the experience
    bank's index) has no wheel for every platform and builds from source on the GPU install."""
    names = [env.cxx_compiler(), "c++", "g++", "clang++"]
    found = next((shutil.which(n) for n in names if n and shutil.which(n)), None)
    if found:
        return Piece("C++ compiler (hnswlib)", True, found)
    return Piece(
        "C++ compiler (hnswlib)",
        False,
        "no c++, g++ or clang++ on PATH: pip builds hnswlib from source with one",
        "apt-get install -y build-essential (or set CXX to a C++ compiler)",
    )


def _driver_version() -> str | None:
    """The NVIDIA driver's version as ``nvidia-smi`` reports it (None: no ``nvidia-smi``)."""
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        out = subprocess.run(
            [exe, "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()
    return first[0].strip() if first else None


def driver_piece(version: str | None = None) -> Piece:
    """The NVIDIA driver, :data:`MIN_DRIVER` or later (``version``: as ``nvidia-smi`` reports
    it; default: asked of ``nvidia-smi``)."""
    what = f"NVIDIA driver >= {MIN_DRIVER} (CUDA 13 torch)"
    found = version if version is not None else _driver_version()
    if not found:
        return Piece(what, False, "nvidia-smi did not answer: no NVIDIA driver found",
                     f"install the NVIDIA driver {MIN_DRIVER} or later")  # fmt: skip
    try:
        major = int(found.split(".")[0])
    except ValueError:
        return Piece(what, False, f"nvidia-smi reports driver {found!r}, not a version",
                     f"install the NVIDIA driver {MIN_DRIVER} or later")  # fmt: skip
    if major < MIN_DRIVER:
        return Piece(
            what,
            False,
            f"driver {found}: the CUDA 13 build of torch needs {MIN_DRIVER} or later",
            f"install the NVIDIA driver {MIN_DRIVER} or later (or a torch build for CUDA 12 in .venv-gpu)",
        )
    return Piece(what, True, f"driver {found}")


def gpu_pieces(driver: str | None = None) -> list[Piece]:
    """What the GPU install needs of the machine: the driver, triton's C compiler and Python
    headers, hnswlib's C++ compiler."""
    return [driver_piece(driver), *triton_pieces(), cxx_piece()]
