"""The base every localfin package may import: the root error class, the one module that reads
environment variables, run logging and progress display.

It imports nothing else of ours and nothing heavy; ``kernels`` (pure array code) does not even
import this. Directions of imports are listed in docs/architecture.md.
"""

from __future__ import annotations

from localfin._version import __version__

__all__ = ["__version__", "env", "errors", "logs", "progress"]
