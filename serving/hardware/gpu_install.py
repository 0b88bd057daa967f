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

__all__ = ["Piece", "compiler_piece", "headers_piece", "triton_pieces"]


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
