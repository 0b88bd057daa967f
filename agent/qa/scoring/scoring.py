"""Each benchmark's own scoring rule, behind one call: :func:`score_answer`.

=========== =========================================================================
bizbench    SEC-NUM: the number the prediction states (currency marks, percent signs,
            commas and spaces ignored, and its magnitude word too) within 1% relative of
            the gold, inclusive. No official scoring script is published (the
            kensho/bizbench dataset card has none); the rule is the one BizBench's paper
            and FinAcumen's Appendix G state
finmmr      the authors' ``get_acc`` rule for rule (:mod:`agent.qa.scoring.finmmr_metric`): 0.2%
            relative, inclusive, after the official normalisation (which ignores magnitude
            words: "0.04525 thousand" is 0.04525); equal to the authors' function on every
            row of ``tests/agent/qa/data/finmmr_official_scores.jsonl``
tatqa       the official evaluator's exact match and F1 (:mod:`agent.qa.scoring.tatqa_metric`) on
            the pair (answer, scale), as TAT-QA's released evaluation takes a prediction:
            the solver's scale field when it gives one (``scale=``), else the answer string
            split by rule P (:func:`agent.qa.scoring.tatqa_metric.split_scale`: a trailing scale
            word or ``%`` after a number is the scale); ``correct`` is EM, ``score`` is F1;
            equal to the official script on every row of
            ``tests/agent/qa/data/tatqa_official_scores.jsonl``, under both mappings
finmme      choice items: the set of option letters equals the gold set; numerical
            items: absolute error within the item's published ``tolerance``; the
            benchmark's Avg over six dimensions is :func:`finmme_avg`
fintmmbench a local judge model: :func:`judge_requests` then :func:`judge_scores`
            (``score_answer`` refuses it, naming those two)
demo        within the item's ``abs_tol`` (half a unit of the decimals the question asks
            for); counts exactly
=========== =========================================================================

An installed plugin's dataset (:mod:`agent.qa.data.extensions`) is scored by the plugin's own scorer.

BizBench, FinMME and demo numbers are read with :func:`agent.qa.core.numbers.parse_number`; an
answer string that holds several numbers is not guessed at (only a string holding exactly one
number is read). A magnitude word is never applied: the number as written is compared with the
gold as written, so a wrong magnitude cannot pass by rescaling. :func:`gold_as_prediction`
writes a gold answer the way a solver should, for gold-vs-gold checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold
from agent.qa.core.numbers import ParsedNumber, find_numbers, format_number, parse_number
from agent.qa.data.extensions import dataset_plugin, plugin_score
from agent.qa.loaders.finmme import FINMME_DIMENSIONS
from agent.qa.scoring.finmmr_metric import finmmr_acc
from agent.qa.scoring.judge import judge_requests, judge_scores
from agent.qa.scoring.tatqa_metric import TATQA_SCALES, answer_string, tatqa_em_f1, tatqa_em_f1_text
from localfin.errors import ConfigError

__all__ = [
    "ItemScore",
    "RELATIVE_TOLERANCE",
    "score_answer",
    "gold_as_prediction",
    "finmme_avg",
    "FinMMEAvg",
    "judge_requests",
    "judge_scores",
    "SCORED",
    "JUDGED",
    "RULES",
    "SCORER_NAMES",
    "scorer_name",
]

#: Relative tolerance of the numeric benchmarks (fractions: 0.01 = 1%).
RELATIVE_TOLERANCE = {"bizbench": 0.01, "finmmr": 0.002}
_SLACK = 1e-9  # float noise allowance, relative to max(1, |gold|)


def _read_prediction(prediction: str) -> tuple[ParsedNumber | None, str]:
    p = parse_number(prediction)
    if p is not None:
        return p, ""
    found = find_numbers(prediction or "")
    if len(found) == 1:
        return found[0], " (number taken from text)"
    return None, f" ({len(found)} numbers in the answer)" if found else " (no number in the answer)"


def _within(p: float, g: float, tol: float) -> bool:
    return abs(p - g) <= tol * abs(g) + _SLACK * max(1.0, abs(g))


def _numeric(gold_value: Any, prediction: str, tol: float, *, absolute: bool = False) -> ItemScore:
    g = parse_number(gold_value)
    if g is None:
        raise ConfigError(f"gold answer {gold_value!r} does not read as a number")
    p, note = _read_prediction(prediction)
    if p is None:
        return ItemScore(False, 0.0, f"no single number in prediction{note}")
    pv, gv = p.value, g.value
    ok = abs(pv - gv) <= tol + 1e-9 if absolute else _within(pv, gv, tol)
    err = abs(pv - gv) if absolute else abs(pv - gv) / max(abs(gv), 1e-300)
    if ok:
        return ItemScore(True, 1.0, f"{p.text} vs gold {gold_value}: err {err:.3g} within {tol:g}{note}")
    kind = "abs" if absolute else "rel"
    return ItemScore(False, 0.0, f"{p.text} vs gold {gold_value}: {kind} err {err:.3g} > {tol:g}{note}")


def _finmmr(gold: Gold, prediction: str) -> ItemScore:
    ok = bool(finmmr_acc(prediction, gold.answer))
    return ItemScore(ok, float(ok), f"{prediction.strip()[:80]!r} vs gold {gold.answer!r}: get_acc={int(ok)}")


_YES = {"yes", "true", "y"}
_NO = {"no", "false", "n"}


def _yes_no(gold_value: bool, prediction: str) -> ItemScore:
    word = re.sub(r"[^a-z]", "", (prediction or "").strip().lower().split(" ")[0] if prediction else "")
    said = True if word in _YES else False if word in _NO else None
    if said is None:
        return ItemScore(False, 0.0, "prediction is not yes/no")
    return ItemScore(said == gold_value, float(said == gold_value), f"said {said}, gold {gold_value}")


_ANSWER_TAG = re.compile(r"answer\s*[:：]\s*(.+)", re.IGNORECASE | re.DOTALL)


def choice_letters(prediction: str) -> set[str]:
    """Option letters a prediction names ("A", "A, C", "Answer: B", "(B) and (D)")."""
    text = prediction or ""
    m = _ANSWER_TAG.search(text)
    if m:
        text = m.group(1)
    compact = re.sub(r"(?i)\band\b|[\s,;/&()\[\].:]", "", text)
    if compact and len(compact) <= 14 and re.fullmatch(r"[A-Na-n]+", compact):
        return set(compact.upper())
    return set(re.findall(r"\b([A-N])\b", text))


def _finmme(gold: Gold, prediction: str) -> ItemScore:
    if gold.answer_type == "choice":
        want = set(str(gold.answer))
        got = choice_letters(prediction)
        ok = got == want
        return ItemScore(
            ok, float(ok), f"letters {''.join(sorted(got)) or '-'} vs gold {''.join(sorted(want))}"
        )
    return _numeric(gold.answer, prediction, float(gold.extra.get("tolerance", 0.0)), absolute=True)


def _tatqa(gold: Gold, prediction: str, scale: str | None) -> ItemScore:
    kind = str(gold.extra.get("tatqa_answer_type") or gold.answer_type)
    dropped = int(gold.extra.get("dropped_empty_spans") or 0)
    try:
        if scale is None:
            em, f1 = tatqa_em_f1_text(gold.answer, gold.scale, kind, prediction, dropped_empty_spans=dropped)
        else:
            em, f1 = tatqa_em_f1(
                gold.answer, gold.scale, kind, prediction, scale, dropped_empty_spans=dropped
            )
    except OverflowError:  # a number too large for a float: the official script crashes on it
        return ItemScore(False, 0.0, "a number in the prediction is too large to score")
    except ValueError as exc:
        raise ConfigError(f"TAT-QA gold {gold.answer!r} ({kind}): {exc}") from None
    said = "" if scale is None else f" (scale {scale!r})"
    return ItemScore(em == 1.0, f1, f"EM={em:.0f} F1={f1:.2f}{said}")


def _demo(gold: Gold, prediction: str) -> ItemScore:
    if gold.answer_type == "count":
        p, note = _read_prediction(prediction)
        ok = p is not None and not p.scale and float(p.value) == float(gold.answer)
        return ItemScore(ok, float(ok), f"{p.text if p else '-'} vs gold {gold.answer}{note}")
    return _numeric(gold.answer, prediction, float(gold.extra["abs_tol"]), absolute=True)


#: The datasets a scorer of this module grades, each by its own rule (module docstring);
#: FinTMMBench is graded by a judge model (:data:`JUDGED`), not here.
SCORED = ("bizbench", "finmmr", "tatqa", "finmme", "demo")
#: Datasets graded by a judge model after the solver (:mod:`agent.qa.scoring.judge`).
JUDGED = ("fintmmbench",)


def _bizbench(gold: Gold, prediction: str) -> ItemScore:
    if isinstance(gold.answer, bool):
        return _yes_no(gold.answer, prediction)
    return _numeric(gold.answer, prediction, RELATIVE_TOLERANCE["bizbench"])


#: dataset -> the name of its rule, as run reports show which scorer graded a set
SCORER_NAMES = {
    "bizbench": "BizBench rule (1 % relative)",
    "finmmr": "FinMMR get_acc (0.2 % relative)",
    "tatqa": "TAT-QA official EM/F1 on (answer, scale)",
    "finmme": "FinMME letters / absolute tolerance",
    "demo": "demo tolerance",
}

#: dataset -> its rule ``(gold, prediction) -> ItemScore`` (TAT-QA takes the scale apart)
RULES: dict[str, Any] = {"finmmr": _finmmr, "bizbench": _bizbench, "finmme": _finmme, "demo": _demo}


def scorer_name(dataset: str) -> str:
    """How run reports name ``dataset``'s rule (a plugin's own ``scorer_name``)."""
    if dataset in SCORER_NAMES:
        return SCORER_NAMES[dataset]
    plugin = dataset_plugin(dataset) if dataset not in JUDGED else None
    return (plugin.scorer_name or f"{dataset} plugin scorer") if plugin is not None else dataset


def score_answer(dataset: str, gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    """Score ``prediction`` against ``gold`` under ``dataset``'s rule (module docstring).

    ``scale``: the prediction's own scale field (TAT-QA: one of
    :data:`agent.qa.scoring.tatqa_metric.TATQA_SCALES`); None: the answer string carries it (split
    by rule P). Other datasets take no scale."""
    if not isinstance(prediction, str):
        raise ConfigError(f"prediction must be a string, got {type(prediction).__name__}")
    if dataset in JUDGED:
        raise ConfigError(
            f"{dataset} is scored by a judge model: build the calls with judge_requests(items, "
            "predictions, model) and read them with judge_scores(results)"
        )
    plugin = dataset_plugin(dataset) if dataset not in SCORED else None  # unknown: names the known
    if scale is not None and (dataset != "tatqa" or scale not in TATQA_SCALES):
        raise ConfigError(
            f"scale={scale!r} for {dataset}; allowed: a TAT-QA scale ({', '.join(map(repr, TATQA_SCALES))}) "
            "for tatqa, None otherwise"
        )
    if not prediction.strip():
        return ItemScore(False, 0.0, "empty prediction")
    if plugin is not None:
        return plugin_score(plugin, gold, prediction)
    if dataset == "tatqa":
        return _tatqa(gold, prediction, scale)
    return RULES[dataset](gold, prediction)


def gold_as_prediction(dataset: str, gold: Gold) -> str:
    """The gold answer written as a solver should write it (for gold-vs-gold checks).

    TAT-QA: the gold in the official evaluator's own form (:func:`agent.qa.scoring.tatqa_metric.
    answer_string`: numbers in plain units with 4 decimals, a multi-span answer as one string
    of its sorted spans), the one form that scores 1.0 for every released gold, including its
    quirks (an accounting negative before a scale word, a span carrying its own scale word).
    """
    if dataset == "tatqa":
        kind = str(gold.extra.get("tatqa_answer_type") or gold.answer_type)
        if isinstance(gold.answer, (list, tuple)):
            spans: list[Any] = [*gold.answer, *([""] * int(gold.extra.get("dropped_empty_spans") or 0))]
        elif kind == "count":
            spans = [str(int(gold.answer))]
        else:
            spans = [str(gold.answer)]
        return answer_string(spans, gold.scale)
    if dataset == "finmme" and gold.answer_type == "choice":
        return ",".join(str(gold.answer))  # "A,C": the letters as FinMME's prompt asks for them
    if isinstance(gold.answer, bool):
        return "yes" if gold.answer else "no"
    if isinstance(gold.answer, float):
        return format_number(gold.answer)
    return str(gold.answer)


@dataclass(frozen=True)
class FinMMEAvg:
    """FinMME's six-dimension summary: accuracy (fraction) and item count per dimension, and
    Avg, the mean over the dimensions that have items (``missing`` names the empty ones)."""

    accuracy: Mapping[str, float]
    counts: Mapping[str, int]
    avg: float
    missing: tuple[str, ...]


def finmme_avg(golds: Sequence[Gold], scores: Sequence[ItemScore]) -> FinMMEAvg:
    """FinMME Avg over items: each item counts in its two dimensions (``extra['dimensions']``)."""
    if len(golds) != len(scores):
        raise ConfigError(f"golds ({len(golds)}) and scores ({len(scores)}) must have the same length")
    hits = dict.fromkeys(FINMME_DIMENSIONS, 0)
    counts = dict.fromkeys(FINMME_DIMENSIONS, 0)
    for g, s in zip(golds, scores):
        dims = g.extra.get("dimensions")
        if not dims:
            raise ConfigError(
                "a FinMME gold lacks extra['dimensions'] (load it with load_items('finmme', ...))"
            )
        for d in dims:
            if d not in counts:
                raise ConfigError(f"unknown FinMME dimension {d!r}; allowed: {', '.join(FINMME_DIMENSIONS)}")
            counts[d] += 1
            hits[d] += int(s.correct)
    acc = {d: hits[d] / counts[d] for d in FINMME_DIMENSIONS if counts[d]}
    missing = tuple(d for d in FINMME_DIMENSIONS if not counts[d])
    avg = sum(acc.values()) / len(acc) if acc else 0.0
    return FinMMEAvg(acc, counts, avg, missing)
