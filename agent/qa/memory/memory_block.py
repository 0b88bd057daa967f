"""The memory block's two forms (``MemoryConfig.block``), as text for the solver's prompt.

- ``directives`` (ours): the annotator's directives for this question under one header line;
  without the annotator, or when its reply is unusable, the retrieved findings and cautions as
  stored (:func:`bank.retrieval.format_memory_block`).
- ``entries`` (the authors' released code, ``fm/retrieve.py`` ``render_memory_block`` with its
  default fields): a short guide to the fields, then every retrieved entry with its question
  (and the head of its context), its gold answer (a reference for the answer's form, not a
  value to copy), its findings, its cautions and the numbers of its images, which are attached
  to the prompt ahead of the question's own; with the annotator on, its directives for this
  question follow the entries; the block ends by saying that an entry that does not fit is to
  be ignored. Our words; the authors' fields and order.
- ``authors`` (the same block in the authors' own words, read from their checkout,
  :func:`agent.qa.authors.messages.memory_block`): their field guide and tags, each entry's
  question with its stored context as their collector writes it, its answer, findings and
  cautions, and their image numbers (every entry's first three images are numbered; the first
  ones that fit are attached, :func:`authors_block`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bank.schema import BankEntry

__all__ = ["BLOCKS", "MEMORY_HEADER", "directives_block", "entries_block", "authors_block"]

BLOCKS = ("directives", "entries", "authors")
MEMORY_HEADER = "Guidance from similar solved problems (follow it where it fits this question):"

_GUIDE = (
    "Experience from similar problems solved before. Each entry gives:",
    "- Problem: the earlier problem (judge from it whether yours is of the same kind);",
    "- Its answer: the correct answer to that problem (a guide to the form of your answer; never "
    "copy its value);",
    "- What worked: strategies that reached the correct answer (follow them where they apply);",
    "- What to avoid: rules learned from wrong attempts (apply one when its condition holds).",
)
_ANNOTATION = "Directives for this problem, written from the entries above:"
_OPT_OUT = "Ignore any entry that does not fit this problem."


def directives_block(directives: Sequence[str]) -> str:
    """The ``directives`` form ("" when there is none)."""
    kept = [d.strip() for d in directives if d.strip()]
    return "\n".join([MEMORY_HEADER, *(f"- {d}" for d in kept)]) if kept else ""


def entries_block(
    entries: Sequence[BankEntry], directives: Sequence[str] = (), *, max_images: int
) -> tuple[str, tuple[str, ...]]:
    """The ``entries`` form and the entries' images to attach (at most ``max_images``, in
    entry order, numbered in the text); ``("", ())`` without entries."""
    if not entries:
        return "", ()
    lines = list(_GUIDE)
    images: list[str] = []
    for i, e in enumerate(entries, 1):
        lines.append(f"Entry {i}")
        problem = e.question + (f"\nContext (start): {e.context_head}" if e.context_head else "")
        lines.append(f"Problem: {problem}")
        if e.answer:
            lines.append(f"Its answer: {e.answer}")
        if e.findings:
            lines += ["What worked:", *(f"- {f}" for f in e.findings)]
        if e.cautions:
            lines += ["What to avoid:", *(f"- {c}" for c in e.cautions)]
        room = max(0, max_images - len(images))
        shown = [p for p in e.images if Path(p).is_file()][:room]  # a moved file is left out
        if shown:
            first = len(images) + 1
            numbers = ", ".join(str(n) for n in range(first, first + len(shown)))
            lines.append(f"Its images: attached image(s) {numbers}")
            images += shown
    kept = [d.strip() for d in directives if d.strip()]
    if kept:
        lines += [_ANNOTATION, *(f"- {d}" for d in kept)]
    lines.append(_OPT_OUT)
    return "\n".join(lines), tuple(images)


def authors_block(code: Any, entries: Sequence[BankEntry], *, max_images: int) -> tuple[str, tuple[str, ...]]:
    """The ``authors`` form (``code``: :class:`agent.qa.authors.checkout.AuthorsCode`) and the
    entries' images to attach: the first ``max_images`` of the numbered ones; ``("", ())``
    without entries."""
    from agent.qa.authors.messages import entry_question, memory_block

    if not entries:
        return "", ()
    numbers: dict[int, list[int]] = {}
    paths: list[str] = []
    for i, e in enumerate(entries):
        have = [p for p in e.images[:3] if Path(p).is_file()]  # their first three, those present
        if have:
            numbers[i] = list(range(len(paths) + 1, len(paths) + 1 + len(have)))
            paths += have
    shown = [
        {
            "question": entry_question(code, e.question, e.context_head, bool(e.images)),
            "answer": e.answer,
            "findings": list(e.findings),
            "cautions": list(e.cautions),
        }
        for e in entries
    ]
    return memory_block(code, shown, numbers), tuple(paths[:max_images])
