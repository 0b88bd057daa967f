"""How far a judge model can be trusted on a benchmark: its verdicts on answers whose truth we know.

FinTMMBench is scored by a judge model (the paper: GPT-4o-mini; offline: a local model). Before
its accuracy means anything, :func:`judge_check` measures the judge on the benchmark's own items:

- every item's **gold answer** as the candidate: the judge should call it correct
  (``gold_right_rate``);
- every item's gold answer **perturbed** into a wrong one: the judge should call it incorrect
  (``wrong_caught_rate``).

The perturbation (:func:`perturb`, deterministic, first rule that applies):

1. ``yes_no``: an answer that starts with yes or no gets the other word;
2. ``number``: the first number of the answer is multiplied by 1.5 and written with the same
   decimals (0 becomes 1), which no rounding the reference shows can hide;
3. ``direction``: the first direction word swaps with its opposite (increase / decrease,
   higher / lower, up / down, positive / negative, rise / fall, gain / loss, above / below,
   bullish / bearish, more / less, buy / sell);
4. ``swapped``: another item's gold answer (the next one in the list that differs).

The calls go through a :class:`serving.journal.JournaledBackend` on ``judge_check.sqlite`` in the
output folder (a rerun replays them) and the figures and every verdict to ``judge_check.json``.
The judge prompt is the one the judge pass uses (:func:`agent.qa.scoring.judge.judge_requests`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.qa.core import runs
from agent.qa.core.items import QAItem
from agent.qa.scoring.judge import JUDGE_PROMPT, judge_requests, judge_scores
from localfin.errors import ConfigError
from serving.backend import Backend
from serving.journal import Journal, JournaledBackend
from serving.types import ChatRequest

__all__ = [
    "JUDGE_CHECK_JOURNAL",
    "JUDGE_CHECK_FILE",
    "JudgeCheck",
    "check_requests",
    "judge_check",
    "perturb",
]

log = logging.getLogger(__name__)

JUDGE_CHECK_JOURNAL = "judge_check.sqlite"
JUDGE_CHECK_FILE = "judge_check.json"

_YES_NO = re.compile(r"^\s*(yes|no)\b", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)")
_PAIRS = (
    ("increase", "decrease"),
    ("increased", "decreased"),
    ("higher", "lower"),
    ("up", "down"),
    ("positive", "negative"),
    ("rise", "fall"),
    ("rose", "fell"),
    ("gain", "loss"),
    ("above", "below"),
    ("bullish", "bearish"),
    ("more", "less"),
    ("buy", "sell"),
)
_OPPOSITE = {a: b for a, b in _PAIRS} | {b: a for a, b in _PAIRS}
_WORD = re.compile(r"\b(" + "|".join(sorted(_OPPOSITE, key=len, reverse=True)) + r")\b", re.IGNORECASE)


def _same_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word.lower()


def _scaled(number: str) -> str:
    plain = number.replace(",", "")
    decimals = len(plain.split(".")[1]) if "." in plain else 0
    value = float(plain)
    new = value * 1.5 if value else 1.0
    text = f"{new:,.{decimals}f}" if "," in number else f"{new:.{decimals}f}"
    if text == number:  # too few decimals to show the change (e.g. 1 -> 1.5 rounds to 2 anyway)
        text = f"{new:.{decimals + 1}f}"
    return text


def perturb(answer: str, others: Sequence[str] = ()) -> tuple[str, str] | None:
    """``(kind, wrong answer)`` made from ``answer`` by the module's rules; None when no rule
    applies and no other answer differs."""
    text = answer.strip()
    m = _YES_NO.match(text)
    if m:
        word = "No" if m.group(1).lower() == "yes" else "Yes"
        return "yes_no", _same_case(word, m.group(1)) + text[m.end() :]
    m = _NUMBER.search(text)
    if m:
        return "number", text[: m.start()] + _scaled(m.group(1)) + text[m.end() :]
    m = _WORD.search(text)
    if m:
        word = _OPPOSITE[m.group(1).lower()]
        return "direction", text[: m.start()] + _same_case(word, m.group(1)) + text[m.end() :]
    for other in others:
        if other.strip() and other.strip().lower() != text.lower():
            return "swapped", other.strip()
    return None


@dataclass(frozen=True)
class JudgeCheck:
    """The judge's verdicts on known answers (rates are fractions; see the module docstring)."""

    judge_model: str
    n: int  # items checked
    gold_right: int  # gold answers judged correct
    gold_right_rate: float
    wrong_n: int  # perturbed answers judged
    wrong_caught: int  # of them judged incorrect
    wrong_caught_rate: float
    unusable: int  # judge replies cut or off-schema (counted as the verdict "incorrect")
    perturbations: dict[str, int] = field(default_factory=dict)  # kind -> count
    model_calls: int = 0
    replayed: int = 0
    out_dir: str = ""


def _gold_text(item: QAItem) -> str:
    g = item.gold.answer
    return "; ".join(map(str, g)) if isinstance(g, (list, tuple)) else str(g)


def check_requests(
    items: Sequence[QAItem],
    judge_model: str,
    *,
    max_tokens: int | None = None,
    prompt_name: str = JUDGE_PROMPT,
    authors: Any = None,
) -> tuple[list[str], list[tuple[QAItem, str, str]], list[ChatRequest]]:
    """The gold answers, the perturbed wrong ones (item, kind, answer) and the judge requests of
    a judge check (with the judge prompt ``prompt_name``): every gold first, then every
    perturbed answer."""
    golds = [_gold_text(it) for it in items]
    wrong: list[tuple[QAItem, str, str]] = []
    for i, (it, g) in enumerate(zip(items, golds)):
        made = perturb(g, golds[i + 1 :] + golds[:i])
        if made is not None:
            wrong.append((it, *made))
    requests = judge_requests(
        [*items, *(w[0] for w in wrong)],
        [*golds, *(w[2] for w in wrong)],
        judge_model,
        max_tokens=max_tokens,
        prompt_name=prompt_name,
        authors=authors,
    )
    return golds, wrong, requests


def judge_check(
    items: Sequence[QAItem],
    backend: Backend,
    judge_model: str,
    out_dir: str | Path,
    *,
    chunk_size: int = 256,
    max_tokens: int | None = None,
    prompt_name: str = JUDGE_PROMPT,
    authors: Any = None,
) -> JudgeCheck:
    """Judge every item's gold answer and a perturbed wrong answer with ``judge_model`` (on
    ``backend``, with the judge prompt ``prompt_name``); writes ``judge_check.json`` in
    ``out_dir`` and returns the rates."""
    if not items:
        raise ConfigError("judge_check needs at least one item")
    if not judge_model:
        raise ConfigError("judge_check needs a judge model (a registry key)")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    golds, wrong, requests = check_requests(
        items, judge_model, max_tokens=max_tokens, prompt_name=prompt_name, authors=authors
    )
    with Journal(out / JUDGE_CHECK_JOURNAL, run_id=f"{out.name}-judge-check") as journal:
        jb = JournaledBackend(backend, journal, chunk_size=chunk_size)
        scores = judge_scores(jb.chat(requests), prompt_name)
    on_gold, on_wrong = scores[: len(items)], scores[len(items) :]
    kinds: dict[str, int] = {}
    for _, kind, _ in wrong:
        kinds[kind] = kinds.get(kind, 0) + 1
    right = sum(s.correct for s in on_gold)
    caught = sum(not s.correct for s in on_wrong)
    check = JudgeCheck(
        judge_model=judge_model,
        n=len(items),
        gold_right=right,
        gold_right_rate=right / len(items),
        wrong_n=len(wrong),
        wrong_caught=caught,
        wrong_caught_rate=caught / len(wrong) if wrong else 0.0,
        unusable=sum(s.detail.startswith("judge reply unusable") for s in scores),
        perturbations=kinds,
        model_calls=jb.called,
        replayed=jb.replayed,
        out_dir=str(out),
    )
    rows = [
        {"item_id": it.item_id, "candidate": g, "kind": "gold", "correct": s.correct, "detail": s.detail}
        for it, g, s in zip(items, golds, on_gold)
    ] + [
        {"item_id": it.item_id, "candidate": w, "kind": k, "correct": s.correct, "detail": s.detail}
        for (it, k, w), s in zip(wrong, on_wrong)
    ]
    runs.write_json(out / JUDGE_CHECK_FILE, {**runs.to_jsonable(check), "verdicts": rows})
    log.info(
        "judge check %s: %.3f of %d gold answers judged right, %.3f of %d wrong answers caught",
        judge_model,
        check.gold_right_rate,
        check.n,
        check.wrong_caught_rate,
        check.wrong_n,
    )
    return check
