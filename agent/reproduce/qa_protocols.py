"""The two FinAcumen protocols a ``[qa]`` table can name (``protocol = "paper" | "authors"``):
each sets the same group of keys, and a key the table sets itself keeps the table's value.

``paper`` is the paper's protocol where the paper states it and ours where it is silent (the
:class:`~agent.reproduce.qa_plan.QAPlan` defaults; a test keeps them equal). ``authors`` is
what the authors' released code does (CamelliaLilium/FinAcumen, the files named below), point
by point, where it can run offline; where it cannot, the value is ours and says so. What each
value rests on, and which read the gold answer or the gold evidence at test time, is in the
protocol ledger (``agent/reproduce/ledger/finacumen.toml``) and in ``docs/finacumen.md``.

The authors' points, and the value ``authors`` takes:

- ``gold_evidence = "authors"``: FinTMMBench's rows cited by the gold answer's sources, one
  line each, and the cited charts of chart questions, put into every variant's context, Base
  included (``ft/dataset/adapters.py``, ``ft/variant/baseline_raw.py``). Reads the gold.
- ``gold_format_hints = "authors"``: instructions derived from the gold answer in the tools
  variants' prompts (``fm/retrieve.py`` ``build_instruction``; its rounding instruction's
  example is the gold number itself); Base gets none. Reads the gold.
- ``annotator = false``: the annotator is off unless asked for (``ft/variant/finacumen.py``).
- ``k_max = [3]`` (``fm/bank.py`` ``K_MAX_DEFAULT``; the paper says 5).
- ``summary_view = "whole"``, ``summary_analysis = true``, ``summary_temperature = 0.3``,
  lessons unbounded in number and length, 8,192 tokens (``fm/cross_verify.py``).
- ``ocr = "model"``: the served vision-language model transcribes the images
  (``fm/ocr_preprocess.py``, ``ft/tool/ocr.py`` with the example config's ``[ocr]``).
- ``tools`` without the market-store ``lookup`` and ``corpus_scope = "all"``: the lookup tool
  searches FinTMMBench's corpus for every question (``ft/tool/financial_data_lookup.py``).
- ``temperature = 0.6`` for the loop (the example profile ``[llm.dser]``; the paper says 0),
  ``base_temperature = 0`` (``baseline_raw.py`` asks at 0).
- ``observation_chars = 4000`` (``max_observe``), ``gate_rejections = 0`` (the terminate guard
  only logs a warning, ``fm/terminate_guard.py``).
- ``scorer``: the authors' scorer of each benchmark (``ft/eval/*.py``; FinTMMBench's judged under
  their strict rules, :mod:`agent.qa.scoring.scorers`).

And the points that send the authors' own texts, read at run time from their checkout
(``qa.authors_code``; :mod:`agent.reproduce.qa_authors`):

- ``base = "authors"``, ``base_reading = "authors"``, ``base_max_tokens = 1024``: their Base
  prompt (the answer line only) and their reading of it, within the ``[llm.dser]`` budget
  (``ft/variant/baseline_raw.py``, ``configs/config.example.toml``).
- ``loop = "authors"``, ``max_tokens = 1024``, ``max_images = 3``: their agent loop (system
  prompts, the policy message at every step, native tool calls, ``terminate``, the zero-tool and
  step-limit rules; ``ft/agent/toolcall.py``, ``ft/agent/base.py``, ``ft/variant/*.py``), 1,024
  tokens a step, the first three images.
- ``answer_reading = "authors"``: the ``terminate`` string scored as it is.
- ``memory_block = "authors"``, ``entry_context = "whole"``: their memory block, each entry's
  question with its whole context (``fm/retrieve.py``, ``fm/collect.py``).
- ``bank_grading = "authors"``, ``summary_prompt = "authors"``: their grading (1 % rule, wrong
  trajectories graded 0 to 0.99 by the model, trajectories that never terminate dropped) and
  summary prompt (``fm/cross_verify.py``).
- ``judge_protocol = "authors"``, ``judge_max_tokens = 5``: their FinTMMBench judge prompt, one
  word, SQuAD exact match for every row when a judge call fails (``ft/eval/fintmm_eval.py``,
  ``ft/benchmark_dser_race.py``).
- ``finmme_context = "caption"`` (``ft/dataset/adapters.py``: the verified caption only) and
  ``corpus_lookup = "exact"`` (``ft/tool/financial_data_lookup.py``: the exact filter).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from localfin.errors import ConfigError

__all__ = ["PROTOCOL_KEYS", "protocol_values", "apply_protocol"]

_PAPER: dict[str, Any] = {
    "gold_evidence": "none",
    "gold_format_hints": "none",
    "memory_block": "directives",
    "annotator": True,
    "k_max": (5,),
    "summary_view": "digest",
    "summary_analysis": False,
    "summary_temperature": 0.0,
    "lesson_chars": 200,
    "max_lessons": 3,
    "summary_max_tokens": None,
    "ocr": "rapidocr",
    "tools": ("python", "lookup", "reparse", "retrieve"),
    "corpus_scope": "own",
    "temperature": None,
    "base_temperature": None,
    "observation_chars": 8000,
    "gate_rejections": 16,
    "scorer": {},
    "base": "model_only",
    "base_reading": "ours",
    "base_max_tokens": 4096,
    "loop": "ours",
    "max_tokens": None,
    "max_images": None,
    "answer_reading": "ours",
    "entry_context": "head",
    "bank_grading": "scorer",
    "summary_prompt": "ours",
    "judge_protocol": "ours",
    "judge_max_tokens": None,
    "finmme_context": "caption_related",
    "corpus_lookup": "bm25",
}

_AUTHORS: dict[str, Any] = {
    "gold_evidence": "authors",
    "gold_format_hints": "authors",
    "memory_block": "authors",
    "annotator": False,
    "k_max": (3,),
    "summary_view": "whole",
    "summary_analysis": True,
    "summary_temperature": 0.3,
    "lesson_chars": 0,
    "max_lessons": 0,
    "summary_max_tokens": 8192,
    "ocr": "model",
    "tools": ("python", "reparse", "retrieve"),
    "corpus_scope": "all",
    "temperature": 0.6,
    "base_temperature": 0.0,
    "observation_chars": 4000,
    "gate_rejections": 0,
    "scorer": {"bizbench": "authors", "finmmr": "authors", "finmme": "authors", "fintmmbench": "authors"},
    "base": "authors",
    "base_reading": "authors",
    "base_max_tokens": 1024,
    "loop": "authors",
    "max_tokens": 1024,
    "max_images": 3,
    "answer_reading": "authors",
    "entry_context": "whole",
    "bank_grading": "authors",
    "summary_prompt": "authors",
    "judge_protocol": "authors",
    "judge_max_tokens": 5,
    "finmme_context": "caption",
    "corpus_lookup": "exact",
}

_VALUES: Mapping[str, Mapping[str, Any]] = MappingProxyType(
    {"paper": MappingProxyType(_PAPER), "authors": MappingProxyType(_AUTHORS)}
)

#: the keys every protocol sets
PROTOCOL_KEYS: tuple[str, ...] = tuple(_PAPER)


def protocol_values(name: str) -> Mapping[str, Any]:
    """The group's values under protocol ``name`` (``paper`` or ``authors``)."""
    if name not in _VALUES:
        raise ConfigError(f"qa.protocol={name!r}; allowed: {', '.join(_VALUES)}")
    return _VALUES[name]


def apply_protocol(table: Mapping[str, Any]) -> dict[str, Any]:
    """A raw ``[qa]`` table with its protocol's values for the group keys it leaves unset
    (``protocol`` unset: ``paper``)."""
    name = table.get("protocol", "paper")
    if not isinstance(name, str):
        raise ConfigError(f"qa.protocol={name!r}; allowed: {', '.join(_VALUES)}")
    values = protocol_values(name)
    out = dict(table)
    for k, v in values.items():
        if k not in out and v is not None:
            out[k] = list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
    return out
