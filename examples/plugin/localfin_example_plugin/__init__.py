"""An example localfin plugin: what each of localfin's extension points receives and returns.

- ``bollinger`` (entry point group ``localfin.baselines``): :mod:`.baseline`;
- ``pct_change_qa`` (``localfin.qa_datasets``): :mod:`.dataset`, with a few items bundled at
  :data:`DATA`;
- ``pct_change`` (``localfin.tools``): :mod:`.tools`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DATA"]

#: The bundled items of the ``pct_change_qa`` dataset (give it to ``localfin qa eval --data``).
DATA = Path(__file__).resolve().parent / "data" / "items.jsonl"
