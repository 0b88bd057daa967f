"""Scorers by name: for each benchmark, the rules one may grade it by, and the choice of one.

=========== ============ =====================================================================
dataset     name         rule
=========== ============ =====================================================================
bizbench    localfin     the number the answer states within 1 % of the gold (the rule
                         BizBench's paper and FinAcumen's G.1 state; :mod:`agent.qa.scoring.scoring`)
bizbench    authors      the FinAcumen authors' released rule: exact match after dropping
                         ``$ % ,`` (:func:`agent.qa.scoring.authors_metrics.bizbench_authors`)
finmmr      localfin     FinMMR's ``get_acc`` on the answer as the solver wrote it
finmmr      official     FinMMR's pipeline: a model extracts the final answer
                         (:mod:`agent.qa.scoring.answer_extract`, call type ``answer_extract``), then
                         ``get_acc``
finmmr      authors      the FinAcumen authors' rule (:func:`~agent.qa.scoring.authors_metrics.
                         finmmr_authors`: ``\\boxed{}``, separators dropped, the last number)
finmme      localfin     the option letters of the whole answer / absolute tolerance
finmme      official     FinMME's ``eval.py`` (:mod:`agent.qa.scoring.finmme_metric`: the first token
                         after ``Answer:``; a final answer without ``Answer:`` is handed over
                         as ``Answer: <answer>``, the reply format its prompt asks for)
finmme      authors      the FinAcumen authors' rule (:func:`~agent.qa.scoring.authors_metrics.
                         finmme_authors`)
fintmmbench localfin     a judge model, prompt ``qa_judge`` (the same fact, unit and scale)
fintmmbench authors      the FinAcumen authors' pipeline: SQuAD exact match above 0.5 on each
                         answer, then every answer graded again by a judge model with the
                         strict prompt ``qa_judge_strict``, whose verdict stands
fintmmbench authors_em   the authors' SQuAD exact match above 0.5 alone (no judge model)
tatqa       official     TAT-QA's official EM/F1 on (answer, scale) (``localfin`` is the same)
demo        localfin     the demo set's tolerance
<plugin>    <its name>   an installed dataset plugin's own scorer
=========== ============ =====================================================================

:class:`NamedScorer` is a scorer (``scorer(dataset, gold, prediction, scale=None)``) holding a
choice ``{dataset: name}``; a dataset it does not name gets :data:`DEFAULT_SCORERS`' (the
localfin rules, TAT-QA's official). Where a model grades the answers (a judge, an extractor), the
call gives the rule's own verdict where the scorer has one (FinTMMBench ``authors``: SQuAD EM,
which the judge pass then replaces) and otherwise a not-correct placeholder; the model pass after
the run writes the verdicts that count (``judge_scores.json``, ``extract_scores.json``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent.qa.core.item_score import ItemScore
from agent.qa.core.items import Gold
from agent.qa.data.extensions import BUILTIN_DATASETS, dataset_plugin, plugin_score
from agent.qa.scoring.authors_metrics import (
    bizbench_authors,
    finmme_authors,
    finmmr_authors,
    fintmm_authors_em,
)
from agent.qa.scoring.finmme_metric import finmme_official
from agent.qa.scoring.judge import JUDGE_PROMPT, STRICT_JUDGE_PROMPT
from agent.qa.scoring.scoring import SCORER_NAMES, score_answer
from localfin.errors import ConfigError

__all__ = [
    "ScorerSpec",
    "SCORERS",
    "DEFAULT_SCORERS",
    "scorer_names",
    "scorer_spec",
    "check_scorer_choice",
    "default_scorer_name",
    "NamedScorer",
    "spec_of",
]

Rule = Callable[[Gold, str, "str | None"], ItemScore]


@dataclass(frozen=True)
class ScorerSpec:
    """One named scorer of one dataset.

    Attributes:
        dataset / name: what it grades and its name.
        label: how run reports name it.
        rule: the verdict on one answer (None: only a model grades it).
        judge_prompt: a judge model grades every answer after the run with this prompt
            (:data:`agent.qa.scoring.judge.JUDGE_PROMPTS`), its verdict standing; "" for none.
        extract: a model extracts the final answer first and ``rule`` grades what it read.
        source: where the rule comes from (the released file it restates).
    """

    dataset: str
    name: str
    label: str
    rule: Rule | None
    judge_prompt: str = ""
    extract: bool = False
    source: str = ""

    @property
    def model_graded(self) -> bool:
        """Whether a model pass after the run gives the verdicts that count."""
        return bool(self.judge_prompt) or self.extract


def _builtin(dataset: str) -> Rule:
    def rule(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
        return score_answer(dataset, gold, prediction, scale)

    return rule


def _verdict(ok: bool, what: str) -> ItemScore:
    return ItemScore(ok, float(ok), what)


def _bizbench_authors(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    ok = bizbench_authors(str(gold.answer), prediction)
    return _verdict(ok, f"{prediction.strip()[:60]!r} vs gold {gold.answer!r}: exact after dropping $ % ,")


def _finmmr_authors(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    ok = finmmr_authors(gold.answer, prediction)
    return _verdict(ok, f"{prediction.strip()[:60]!r} vs gold {gold.answer!r}: authors' 0.2 % rule")


def _finmme_fields(gold: Gold) -> tuple[str, Any, Any]:
    ex = gold.extra
    text = ex.get("answer_text", gold.answer)
    return str(ex.get("question_type", "")), text, ex.get("tolerance_published", ex.get("tolerance"))


_ANSWER_MARK = re.compile(r"(?i)answer\s*:")


def _finmme_official(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    qtype, text, tol = _finmme_fields(gold)
    # the solver's final answer handed over as the official prompt asks a reply to end
    reply = prediction if _ANSWER_MARK.search(prediction) else f"Answer: {prediction.strip()}"
    ok = finmme_official(qtype, text, reply, tolerance=tol)
    return _verdict(ok, f"{qtype}: official eval.py on {prediction.strip()[:60]!r} vs gold {text!r}")


def _finmme_authors(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    qtype, text, tol = _finmme_fields(gold)
    ok = finmme_authors(
        qtype, str(text), prediction, tolerance=tol, has_options=bool(gold.extra.get("has_options"))
    )
    return _verdict(ok, f"{qtype}: authors' rule on {prediction.strip()[:60]!r} vs gold {text!r}")


def _fintmm_em(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
    ok = fintmm_authors_em(str(gold.answer), prediction)
    return _verdict(ok, f"SQuAD EM {'1' if ok else '0'} (> 0.5 is right)")


_FA = "CamelliaLilium/FinAcumen @ 16246593"
#: dataset -> name -> its spec (built-in datasets).
SCORERS: Mapping[str, Mapping[str, ScorerSpec]] = {
    "bizbench": {
        "localfin": ScorerSpec("bizbench", "localfin", SCORER_NAMES["bizbench"], _builtin("bizbench"),
                               source="BizBench paper and FinAcumen G.1: 1 % relative"),
        "authors": ScorerSpec("bizbench", "authors", "BizBench, authors' rule (exact after $ % , dropped)",
                              _bizbench_authors, source=f"{_FA}: finacumen/ft/eval/bizbench_eval.py"),
    },
    "finmmr": {
        "localfin": ScorerSpec("finmmr", "localfin", SCORER_NAMES["finmmr"], _builtin("finmmr"),
                               source="addictedLL/FinMMR @ d8b12ccc: get_acc, on the answer as written"),
        "official": ScorerSpec("finmmr", "official", "FinMMR official (model-extracted answer, get_acc)",
                               _builtin("finmmr"), extract=True,
                               source="addictedLL/FinMMR @ d8b12ccc: evaluate.py (eval_cot) and get_acc"),
        "authors": ScorerSpec("finmmr", "authors", "FinMMR, authors' rule (0.2 %, boxed, last number)",
                              _finmmr_authors, source=f"{_FA}: finacumen/ft/eval/finmmr_eval.py"),
    },
    "finmme": {
        "localfin": ScorerSpec("finmme", "localfin", SCORER_NAMES["finmme"], _builtin("finmme"),
                               source="localfin: letters of the whole answer, absolute tolerance"),
        "official": ScorerSpec("finmme", "official", "FinMME official eval.py (first token after Answer:)",
                               _finmme_official, source="luo-junyu/FinMME @ 702cb3a: eval.py check_answer"),
        "authors": ScorerSpec("finmme", "authors", "FinMME, authors' rule", _finmme_authors,
                              source=f"{_FA}: finacumen/ft/eval/finmme_eval.py"),
    },
    "fintmmbench": {
        "localfin": ScorerSpec("fintmmbench", "localfin", "judge (qa_judge)", None, judge_prompt=JUDGE_PROMPT,
                               source="FinTMMBench paper: a GPT-4o-mini judge; our prompt"),
        "authors": ScorerSpec("fintmmbench", "authors", "SQuAD EM > 0.5, then judge (qa_judge_strict)",
                              _fintmm_em,
                              judge_prompt=STRICT_JUDGE_PROMPT,
                              source=f"{_FA}: finacumen/ft/eval/fintmm_eval.py, ft/benchmark_dser_race.py"),
        "authors_em": ScorerSpec("fintmmbench", "authors_em", "SQuAD EM > 0.5 (authors' default)", _fintmm_em,
                                 source=f"{_FA}: finacumen/ft/variant/base.py (_score_native)"),
    },
    "tatqa": {
        "official": ScorerSpec("tatqa", "official", SCORER_NAMES["tatqa"], _builtin("tatqa"),
                               source="NExTplusplus/TAT-QA @ 870accc4: tatqa_metric.py"),
        "localfin": ScorerSpec("tatqa", "localfin", SCORER_NAMES["tatqa"], _builtin("tatqa"),
                               source="the official rule (localfin's is the same)"),
    },
    "demo": {
        "localfin": ScorerSpec("demo", "localfin", SCORER_NAMES["demo"], _builtin("demo"), source="localfin"),
    },
}  # fmt: skip

#: The scorer of a dataset a choice does not name.
DEFAULT_SCORERS: Mapping[str, str] = {
    d: ("official" if d == "tatqa" else "localfin") for d in BUILTIN_DATASETS
}


def _plugin_spec(dataset: str) -> ScorerSpec:
    plugin = dataset_plugin(dataset)  # an unknown dataset: ConfigError naming the known ones
    assert plugin is not None

    def rule(gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
        return plugin_score(plugin, gold, prediction)

    label = plugin.scorer_name or f"{dataset} plugin scorer"
    return ScorerSpec(dataset, dataset, label, rule, source=f"the {dataset} plugin")


def default_scorer_name(dataset: str) -> str:
    """The scorer ``dataset`` gets when a choice does not name one (a plugin's: its own)."""
    return DEFAULT_SCORERS.get(dataset) or _plugin_spec(dataset).name


def scorer_names(dataset: str) -> tuple[str, ...]:
    """The names ``dataset`` may be scored by (a plugin's: its own name)."""
    if dataset in SCORERS:
        return tuple(SCORERS[dataset])
    return (_plugin_spec(dataset).name,)


def scorer_spec(dataset: str, name: str | None = None) -> ScorerSpec:
    """The spec of ``dataset``'s scorer ``name`` (None: its default)."""
    if dataset not in SCORERS:
        spec = _plugin_spec(dataset)
        if name not in (None, spec.name):
            raise ConfigError(f"scorer {name!r} for {dataset}; allowed: {spec.name!r} (the plugin's own)")
        return spec
    name = DEFAULT_SCORERS[dataset] if name is None else name
    if name not in SCORERS[dataset]:
        raise ConfigError(f"scorer {name!r} for {dataset}; allowed: {', '.join(SCORERS[dataset])}")
    return SCORERS[dataset][name]


def check_scorer_choice(choice: Mapping[str, str], what: str = "qa.scorer") -> dict[str, str]:
    """``choice`` checked: every key a dataset, every value one of its scorer names."""
    if not isinstance(choice, Mapping):
        raise ConfigError(f"{what}={choice!r}; allowed: a table of dataset = scorer name")
    out = {}
    for dataset, name in choice.items():
        if not isinstance(name, str):
            raise ConfigError(f"{what}.{dataset}={name!r}; allowed: a scorer name (a string)")
        try:
            out[str(dataset)] = scorer_spec(str(dataset), name).name
        except ConfigError as exc:
            raise ConfigError(f"{what}.{dataset}: {exc}") from None
    return out


class NamedScorer:
    """A scorer grading each dataset by the rule ``choice`` names (module docstring)."""

    def __init__(self, choice: Mapping[str, str] | None = None) -> None:
        self.choice = check_scorer_choice(choice or {})
        self.__name__ = "named scorer"

    def spec(self, dataset: str) -> ScorerSpec:
        return scorer_spec(dataset, self.choice.get(dataset))

    def __call__(self, dataset: str, gold: Gold, prediction: str, scale: str | None = None) -> ItemScore:
        spec = self.spec(dataset)
        if not isinstance(prediction, str):
            raise ConfigError(f"prediction must be a string, got {type(prediction).__name__}")
        if spec.rule is None:
            return ItemScore(False, 0.0, f"graded by a judge model after the run ({spec.label})")
        if scale is not None and dataset != "tatqa":
            raise ConfigError(
                f"scale={scale!r} for {dataset}; allowed: None (only TAT-QA answers have a scale)"
            )
        if not prediction.strip() and dataset != "fintmmbench":  # the authors' SQuAD rule grades it
            return ItemScore(False, 0.0, "empty prediction")
        return spec.rule(gold, prediction, scale)

    def __repr__(self) -> str:
        return f"NamedScorer({self.choice!r})"


def spec_of(scorer: Any, dataset: str) -> ScorerSpec | None:
    """The spec ``scorer`` grades ``dataset`` by: a :class:`NamedScorer`'s choice; the
    default scorer (:func:`agent.qa.scoring.scoring.score_answer`, or None given) the default; another
    callable has none (None)."""
    if isinstance(scorer, NamedScorer):
        return scorer.spec(dataset)
    if scorer is None or scorer is score_answer:
        try:
            return scorer_spec(dataset)
        except ConfigError:  # a dataset no scorer knows (not installed): the caller decides
            return None
    return None
