"""The ``[qa]`` table of a FinAcumen reproduction config: :class:`QAPlan` (model, tools,
variants, retrieval grid, the solver's and the answer gate's settings, and the protocol points
on which the paper and the authors' released code differ), its :class:`QASource` entries
(``[[qa.bank]]``, ``[[qa.sets]]``) and its :class:`QAArm` entries (``[[qa.arms]]``).

``protocol`` names a group of settings (:mod:`agent.reproduce.qa.protocols`): a key of that
group that the ``[qa]`` table does not set takes the protocol's value; a key the table sets
keeps the table's. An arm (``[[qa.arms]]``) is the plan again with its own keys and, when it
names another ``protocol``, that protocol's values for the group keys the ``[qa]`` table leaves
unset (:func:`arm_plan`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.qa.data.gold_inputs import EVIDENCE_FORMS as GOLD_EVIDENCE
from agent.qa.data.gold_inputs import FORMAT_HINTS
from agent.qa.solver.gate import GateConfig
from localfin.errors import ConfigError
from serving.engines.engine_args import check_engine_fields
from serving.open import BACKEND_KINDS, backend_kinds

__all__ = [
    "QASource",
    "QAPlan",
    "QAArm",
    "PROTOCOLS",
    "FORMAT_HINTS",
    "GOLD_EVIDENCE",
    "MEMORY_BLOCKS",
    "SUMMARY_VIEWS",
    "OCR_ENGINES",
    "CORPUS_SCOPES",
    "EMBEDDERS",
    "arm_plan",
]

_QA_VARIANTS = ("base", "ft", "ft_fm")
#: = agent.qa.solver.toolset.TOOL_NAMES (a test checks)
_QA_TOOLS = ("python", "lookup", "reparse", "retrieve")
_QA_BASES = (
    "model_only",
    "constrained",
    "authors",
)  # = agent.qa.solver.solver_config.BASE_MODES (a test checks)

#: ``paper``: the paper's protocol (and ours where it is silent); ``authors``: what the
#: authors' released code does (:mod:`agent.reproduce.qa.protocols`)
PROTOCOLS = ("paper", "authors")
#: ``directives``: the annotator's directives for this question; ``entries``: each retrieved
#: entry as stored (question, answer, findings, cautions), with its images; ``authors``: the
#: same entries in the authors' own words, read from their checkout (``authors_code``)
MEMORY_BLOCKS = ("directives", "entries", "authors")
#: ``digest``: each trajectory's actions in at most ``summary_chars`` characters; ``whole``:
#: every step of every trajectory (thought, action, arguments, output), uncut
SUMMARY_VIEWS = ("digest", "whole")
#: ``rapidocr``: the local OCR engine; ``model``: the served vision-language model transcribes
OCR_ENGINES = ("rapidocr", "model")
#: ``own``: ``retrieve`` for the questions of the benchmark that ships the corpus (FinTMMBench);
#: ``all``: for every question of every benchmark
CORPUS_SCOPES = ("own", "all")
#: the embedding models the bank can use offline
EMBEDDERS = ("minilm",)


def _one_of(key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"qa.{key}={value!r}; allowed: {', '.join(allowed)}")


def _within(key: str, value: Any, lo: float, hi: float, unset: bool = True) -> None:
    if value is None and unset:
        return
    if value is None or not lo <= value <= hi:
        raise ConfigError(f"qa.{key}={value!r}; allowed: {lo:g}..{hi:g}" + (" or unset" if unset else ""))


@dataclass(frozen=True)
class QASource:
    """A benchmark file or folder: bank source (``[[qa.bank]]``) or evaluation set (``[[qa.sets]]``).

    label: the name its results carry (e.g. ``FinMMR Easy``).
    dataset: the benchmark's loader (``localfin qa eval --dataset``).
    path: its file or folder as the benchmark releases it (relative: under
        ``<data root>/benchmarks``).
    split: the benchmark's split (``train``, ``validation``, ``test``, ``dev``; unset: all).
    subset: a part of the benchmark (e.g. FinMMR's difficulty level; unset: all).
    limit: most items taken (unset: all).
    test_share: for a benchmark without a split: the share of items drawn as its test part.
    require_images: skip an item whose image files are missing (false: keep it, reported).

    ``test_share`` (> 0) is for a benchmark that ships no train/test split (FinTMMBench, FinMME):
    that share of its items is its test part and the rest its train part, drawn by a seeded hash
    of the item ids (:func:`agent.qa.data.holdout.hold_out`); ``split`` (``train`` or ``test``) then
    picks the part, and ``limit`` applies after the draw. ``require_images = false`` keeps an
    item whose image files this copy lacks (loaded incomplete and reported) instead of skipping
    it (reported too).
    """

    label: str
    dataset: str
    path: str
    split: str | None = None
    subset: str | None = None
    limit: int | None = None
    test_share: float = 0.0
    require_images: bool = True

    def __post_init__(self) -> None:
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"qa source {self.label!r}: limit={self.limit!r}; allowed: a whole number >= 1")
        if not 0.0 <= self.test_share < 1.0:
            raise ConfigError(f"qa source {self.label!r}: test_share={self.test_share!r}; allowed: [0, 1)")
        if self.test_share and self.split not in ("train", "test"):
            raise ConfigError(
                f"qa source {self.label!r}: test_share needs split 'train' or 'test' (the part to take); "
                f"got split={self.split!r}"
            )

    def resolve(self, data_root: Path) -> Path:
        p = Path(self.path).expanduser()
        return p if p.is_absolute() else data_root / "benchmarks" / p


@dataclass(frozen=True)
class QAPlan:
    """The ``[qa]`` table: one model, the variants, the retrieval grid, the solver's settings
    and the protocol (the module docstring)."""

    #: registry key of the model that answers (the paper: Qwen3-VL-8B-Instruct)
    model: str
    #: ``paper`` or ``authors``: the group of settings the keys below default to
    #: (the FinAcumen page lists both groups; a key set in the table wins over its protocol)
    protocol: str = "paper"
    #: ``vllm`` (in-process engine), ``openai`` (a running server) or a plugin's kind
    backend: str = "vllm"
    #: the server of ``openai`` (e.g. http://127.0.0.1:8000/v1)
    base_url: str = ""
    #: most tool steps per question after the plan (the paper: 16)
    max_steps: int = 16
    #: the tools of Base+FT and Base+FT+FM (the paper's four)
    tools: tuple[str, ...] = ("python", "lookup", "reparse", "retrieve")
    #: the market store the ``lookup`` tool reads (relative: under the data root); required
    #: when ``tools`` has ``lookup``
    store: str = ""
    #: which questions get the ``retrieve`` tool over FinTMMBench's corpus: ``own`` (that
    #: benchmark's) or ``all`` (every question, as the authors' lookup tool is offered)
    corpus_scope: str = "own"
    #: the FinTMMBench folder whose corpus ``retrieve`` and the gold evidence read (relative:
    #: under ``<data root>/benchmarks``; "" = the plan's FinTMMBench source)
    corpus: str = ""
    #: the variants evaluated: Base, Base+FT (tools), Base+FT+FM (tools and experience memory)
    variants: tuple[str, ...] = ("base", "ft", "ft_fm")
    #: cosine threshold of the experience memory (the paper: 0.65)
    tau: float = 0.65
    #: retrieval depths evaluated (the paper: 5; a sweep lists several)
    k_max: tuple[int, ...] = (5,)
    bank_sizes: tuple[int, ...] = ()  # () = the whole bank only
    taus: tuple[float, ...] = ()  # non-empty: retrieval analytics (tau sweep) over bank_sizes
    #: the bank's embedding model (``minilm``: all-MiniLM-L6-v2, local)
    embedder: str = "minilm"
    #: trajectories sampled per training item when the bank is built (the paper: 8)
    bank_k: int = 8
    #: sampling temperature of those trajectories
    bank_temperature: float = 0.7
    bank: tuple[QASource, ...] = ()
    sets: tuple[QASource, ...] = ()
    #: other runs of this plan with some keys changed, each in its own folder
    arms: tuple[QAArm, ...] = ()
    #: registry key of the model that judges FinTMMBench answers, in the evaluation's judge
    #: pass and in the bank build ("" = ``model``). The paper judged with GPT-4o-mini, out of
    #: scope offline; the GPU configs name a separate local model. With ``backend = "vllm"`` a
    #: judge other than ``model`` gets its own in-process engine beside the solver's
    #: (``judge_gpu_memory``); with ``backend = "openai"`` the server must serve both.
    judge_model: str = ""
    #: fraction of each GPU's memory the separate judge's in-process engine takes (the solver's
    #: engine keeps its registry share minus this); unused when the judge is ``model``
    judge_gpu_memory: float = 0.25
    #: the judge's server with ``backend = "openai"`` ("" = ``base_url``, a server that serves
    #: both models)
    judge_base_url: str = ""
    #: items of each judged set on which the judge is checked (its verdicts on their gold
    #: answers and on perturbed wrong ones, as ``localfin qa judge-check``); 0 = no check
    judge_check_items: int = 200
    #: the Base variant's protocol: ``model_only`` (the paper's: question and context in, free
    #: text out, the final answer read from the text), ``constrained`` (one JSON reply with the
    #: question's answer format and a numeric pattern) or ``authors`` (the authors' Base prompt,
    #: read from their checkout: the answer line only)
    base: str = "model_only"
    #: completion budget of the model-only Base reply (tokens; free text has no schema bound)
    base_max_tokens: int = 4096
    #: longest thought of one ReAct action (characters; the paper states none)
    thought_chars: int = 400
    #: most characters of one tool output or image transcription shown to the solver
    observation_chars: int = 8000
    #: failed answer checks sent back before a proposed answer stands (0: the first answer
    #: stands, its check only recorded); ``max_steps`` or more: only the step budget stops the
    #: loop (the paper states no separate cap)
    gate_rejections: int = 16
    #: constrain the solver's plan and action replies by their JSON schema (off: free replies,
    #: the first JSON object in each read and checked against the same schema)
    action_schema: bool = True
    # ------------------------------------------------------------------ the authors' code
    #: a checkout of the authors' code (CamelliaLilium/FinAcumen at the pinned commit, the folder
    #: holding ``finacumen/``) whose prompt texts the settings set to ``authors`` below send, read
    #: at run time and never stored ("" = none; ``--authors-code`` on the command line fills it)
    authors_code: str = ""
    #: check every text read from ``authors_code`` against the pinned commit (false: a checkout
    #: whose texts differ is used as it is, and the run's notes name what differs)
    authors_code_verify: bool = True
    #: the tools variants' loop: ``ours`` (a plan, schema-checked JSON actions, the answer gate)
    #: or ``authors`` (their agent loop: their system prompt and per-step policy message, native
    #: tool calls, ``terminate``, their zero-tool and step-limit rules)
    loop: str = "ours"
    #: how the tools variants' final answer is read before scoring: ``ours`` (the final-answer
    #: rule) or ``authors`` (the submitted string as it is)
    answer_reading: str = "ours"
    #: how the free Base reply is read: ``ours`` (the final-answer rule) or ``authors`` (the first
    #: bold final-answer line, else a last line of at most 200 characters)
    base_reading: str = "ours"
    #: the authors' memory mode at test time: ``test`` (retrieve) or ``train`` (retrieve nothing;
    #: their harness's default, which writes test items into the bank instead)
    memory_mode: str = "test"
    #: what a bank entry keeps of its item's context: ``head`` (``memory_context_chars``) or
    #: ``whole`` (the authors' entries carry the whole context; retrieval embeds the head either way)
    entry_context: str = "head"
    #: how the bank build grades trajectories: ``scorer`` (each benchmark's scorer, right or
    #: wrong) or ``authors`` (their 1 % rule, a model grading wrong ones 0 to 0.99, trajectories
    #: without their own final answer dropped)
    bank_grading: str = "scorer"
    #: sampling temperature of the authors' grading call
    grading_temperature: float = 0.1
    #: reply budget of the authors' grading call (tokens)
    grading_max_tokens: int = 4096
    #: the bank's summary prompt: ``ours`` or ``authors`` (theirs, read from their checkout)
    summary_prompt: str = "ours"
    #: the FinTMMBench judge: ``ours`` (a JSON verdict under the scorer's judge prompt) or
    #: ``authors`` (their prompt, a YES/NO word; SQuAD exact match for every row when a judge
    #: call fails)
    judge_protocol: str = "ours"
    #: the judge's reply budget (tokens; unset: the verdict schema's worst case)
    judge_max_tokens: int | None = None
    #: FinMME's context: ``caption_related`` (its verified caption and related sentences) or
    #: ``caption`` (the caption alone, as the authors' adapter gives it)
    finmme_context: str = "caption_related"
    #: what the ``retrieve`` tool does over FinTMMBench's corpus: ``bm25`` (our search, charts
    #: included) or ``exact`` (the authors' exact filter on source, symbol, date and indicator,
    #: at most 10 rows, no charts)
    corpus_lookup: str = "bm25"
    #: set tau before the evaluation: ``none`` (``tau`` as given) or ``hit_rate`` (the tau at
    #: which the run's test questions reach ``tau_hit_rate`` on the bank; ours, declared)
    tau_calibration: str = "none"
    #: the hit rate ``hit_rate`` calibration aims at (the paper: 79.8 % at tau 0.65 on 1,200 entries)
    tau_hit_rate: float = 0.798
    # ------------------------------------------------------------------ reading the gold
    #: instructions derived from the question's gold answer (decimal places, currency,
    #: percent, magnitude, count, name, sentence, option letters) shown with the question to
    #: the tools variants and the bank's trajectories, never to Base: ``none``, ``format``
    #: (the instructions only) or ``authors`` (as the released code writes them: the rounding
    #: instruction's example is the gold number itself); reads the gold answer
    gold_format_hints: str = "none"
    #: FinTMMBench evidence taken from the gold annotation's sources and put into every
    #: variant's context, Base included, and the bank's trajectories': ``none``, ``authors``
    #: or ``full``; reads the gold evidence
    gold_evidence: str = "none"
    # ------------------------------------------------------------------ memory
    #: what the memory block shows: ``directives`` (the annotator's, for this question) or
    #: ``entries`` (each retrieved entry: question, answer, findings, cautions, its images), or
    #: ``authors`` (their memory block, its texts read from their checkout)
    memory_block: str = "directives"
    #: one annotator call rewrites the retrieved entries for this question (off: none; the
    #: ``directives`` block then shows the entries' findings and cautions as stored)
    annotator: bool = True
    #: longest directive the annotator may write (characters)
    directive_chars: int = 200
    #: most directives the annotator keeps
    max_directives: int = 5
    #: longest finding or caution of an entry shown to the annotator (characters)
    entry_chars: int = 300
    # ------------------------------------------------------------------ bank summarizer
    #: what the summarizer sees of each trajectory: ``digest`` or ``whole``
    summary_view: str = "digest"
    #: characters of one trajectory's digest (``summary_view = "digest"``)
    summary_chars: int = 500
    #: sampling temperature of the summary call
    summary_temperature: float = 0.0
    #: the summary reply starts with an analysis of the item (its derivation of the gold
    #: answer) before the findings and cautions
    summary_analysis: bool = False
    #: longest finding or caution the summarizer may write (characters; 0: no bound)
    lesson_chars: int = 200
    #: most findings and most cautions per entry (0: no bound)
    max_lessons: int = 3
    #: completion budget of the summary call (tokens; unset: the reply schema's worst case,
    #: which needs both lesson bounds)
    summary_max_tokens: int | None = None
    # ------------------------------------------------------------------ images
    #: OCR before the loop and in the bank build: ``rapidocr`` (local engine) or ``model``
    #: (the served vision-language model transcribes each image, call type ``qa_ocr``)
    ocr: str = "rapidocr"
    # ------------------------------------------------------------------ solver (unset: the model's default)
    #: sampling temperature of the ReAct calls and, unless ``base_temperature`` is set, of
    #: Base (unset: 0)
    temperature: float | None = None
    #: sampling temperature of the Base call (unset: ``temperature``)
    base_temperature: float | None = None
    #: seed of every solver call (unset: 0)
    seed: int | None = None
    #: completion budget of every solver call (tokens; unset: the reply schema's worst case,
    #: or the registry's budget for a thinking model)
    max_tokens: int | None = None
    #: bound on each plan field (``inputs``, ``plan``; ``experience`` half of it), characters
    #: (unset: 600; 160 for the CPU model)
    plan_chars: int | None = None
    #: bound on the final answer (characters; unset: 200; 80 for the CPU model)
    answer_chars: int | None = None
    #: bound on the constrained Base's reasoning (characters; unset: 600; 200 for the CPU model)
    base_reasoning_chars: int | None = None
    #: bound on a tool argument whose schema leaves strings unbounded (characters; unset:
    #: 2000; 400 for the CPU model)
    arg_chars: int | None = None
    #: most context characters put in the prompt (unset: all; 3000 for the CPU model)
    context_chars: int | None = None
    #: a conversation longer than this has its oldest tool outputs elided (characters; unset:
    #: 48000; three times the context for the CPU model, at most 16000)
    max_prompt_chars: int | None = None
    #: unusable replies in a row before the forced final call (unset: 3)
    max_bad_replies: int | None = None
    #: constrain a numeric final answer to one number with its unit by a schema pattern
    #: (unset: on)
    answer_patterns: bool | None = None
    #: attach the question's images (and a tool's images) to the requests (unset: when the
    #: model takes images)
    send_images: bool | None = None
    #: most images in one conversation (unset: the serving limit per prompt)
    max_images: int | None = None
    #: benchmarks whose final answer carries a separate scale field (unset: ``["tatqa"]``)
    scale_datasets: tuple[str, ...] | None = None
    #: the answer gate's settings (``[qa.gate]``)
    gate: GateConfig = field(default_factory=GateConfig)
    #: the scorer of each benchmark, by name: ``localfin`` (the rules
    #: the papers state), ``official`` (the benchmark's released scorer: FinMMR with its answer
    #: extractor, FinMME's eval.py, TAT-QA's), ``authors`` (the FinAcumen authors' released
    #: scorers: what produced their Table 1), ``authors_em`` (FinTMMBench's SQuAD match alone),
    #: or an installed plugin's name; a benchmark not named: ``localfin`` (TAT-QA: ``official``),
    #: written out here for every benchmark the plan reads
    scorer: dict[str, str] = field(default_factory=dict)
    #: registry key of the model that reads the final answers for a scorer that extracts them
    #: (FinMMR ``official``); "" = the judge model (``judge_model``, else ``model``)
    extract_model: str = ""
    #: ``backend = "vllm"``: a declared weight quantization of the solver's engine, ``fp8``
    #: (vLLM ``--quantization fp8``, half the memory of bf16; not the weights the paper ran),
    #: or "" (the checkpoint's own)
    quantization: str = ""
    #: ``backend = "vllm"``: declared pipeline stages of the solver's engine (1: none; more
    #: spans nodes, which needs a Ray cluster)
    pipeline_parallel: int = 1
    #: ``backend = "vllm"``: vLLM's batch-invariant kernels (``VLLM_BATCH_INVARIANT=1``) in the
    #: solver's and the judge's engines, so a resumed GPU run's new replies equal an
    #: uninterrupted run's (see "Faults and recovery", Determinism)
    batch_invariant: bool = False
    #: ``backend = "vllm"``: vLLM's asynchronous scheduling (its CUDA default), off until a GPU
    #: check validates it with structured outputs and seeded requests
    async_scheduling: bool = False
    #: ``backend = "vllm"``: how the engines' processes start (``spawn``, as the CPU build
    #: always does, or ``fork``)
    worker_start_method: str = "spawn"
    #: ``backend = "vllm"``: tokens the engines schedule in one step (0: the device's default,
    #: 8,192 on a GPU); the in-process engines and ``vllm serve`` take the same
    max_num_batched_tokens: int = 0
    # ------------------------------------------------------------------ bounds and seeds
    #: seed of the hash that draws the test part of a benchmark without a split
    #: (``test_share``: FinTMMBench, FinMME; a seeded hash of the item ids)
    holdout_seed: int = 42
    #: leading context characters embedded with the question, for retrieval and for the
    #: bank's entries (the paper: the question and the first 600 characters of its context)
    memory_context_chars: int = 600
    #: most characters of one tool output shown to the solver (before ``observation_chars``)
    tool_text_chars: int = 4000
    #: characters of a FinTMMBench corpus row kept as its text (indexed and shown)
    corpus_text_chars: int = 4000
    #: characters of one ``retrieve`` result's text shown to the solver
    corpus_shown_chars: int = 400
    #: most results one ``retrieve`` call may ask for
    corpus_max_k: int = 10
    #: most sessions ``lookup`` lists one by one (a longer period is summarised)
    lookup_max_listed: int = 40
    #: longest ``window`` (sessions) a ``lookup`` call may ask for
    lookup_max_window: int = 5040
    #: longest image side the local OCR engine reads (pixels; a larger image is shrunk)
    ocr_max_side: int = 2000
    #: most characters of a final answer shown to the judge (the rest is dropped)
    judge_candidate_chars: int = 2000

    def __post_init__(self) -> None:
        _one_of("protocol", self.protocol, PROTOCOLS)
        bad = [v for v in self.variants if v not in _QA_VARIANTS]
        if (not self.variants and not self.taus) or bad:
            raise ConfigError(f"qa.variants={list(self.variants)}; allowed: {', '.join(_QA_VARIANTS)}")
        if self.backend not in BACKEND_KINDS and self.backend not in backend_kinds():
            raise ConfigError(f"qa.backend={self.backend!r}; allowed: {', '.join(backend_kinds())}")
        if not 0.05 <= self.judge_gpu_memory <= 0.6:
            raise ConfigError(f"qa.judge_gpu_memory={self.judge_gpu_memory}; allowed: 0.05..0.6")
        if self.judge_check_items < 0:
            raise ConfigError(f"qa.judge_check_items={self.judge_check_items}; allowed: >= 0")
        from agent.qa.scoring.scorers import check_scorer_choice, default_scorer_name

        given = check_scorer_choice(self.scorer)
        # every benchmark the plan reads gets its scorer written out (the effective settings
        # then list each one, the default ones included)
        used = dict.fromkeys(s.dataset for s in (*self.sets, *self.bank))
        resolved = {d: given.get(d) or default_scorer_name(d) for d in used}
        object.__setattr__(self, "scorer", resolved | given)
        if self.extract_model and self.extract_model not in (self.model, self.judge):
            raise ConfigError(
                f"qa.extract_model={self.extract_model!r}; allowed: the solver model {self.model!r} or the "
                f'judge model {self.judge!r} (their engines serve it), or "" for the judge model'
            )
        if self.base not in _QA_BASES:
            raise ConfigError(f"qa.base={self.base!r}; allowed: {', '.join(_QA_BASES)}")
        if not 16 <= self.base_max_tokens <= 131_072:
            raise ConfigError(f"qa.base_max_tokens={self.base_max_tokens}; allowed: 16..131072")
        if not 10 <= self.thought_chars <= 20_000:
            raise ConfigError(f"qa.thought_chars={self.thought_chars}; allowed: 10..20000")
        if not 100 <= self.observation_chars <= 100_000:
            raise ConfigError(f"qa.observation_chars={self.observation_chars}; allowed: 100..100000")
        if not 0 <= self.gate_rejections <= 64:
            raise ConfigError(f"qa.gate_rejections={self.gate_rejections}; allowed: 0..64")
        if not 1 <= self.max_steps <= 64:
            raise ConfigError(f"qa.max_steps={self.max_steps}; allowed: 1..64")
        check_engine_fields(self, "qa")
        if not 0.0 < self.tau < 1.0 or any(not 0.0 < t < 1.0 for t in self.taus):
            raise ConfigError(f"qa.tau / qa.taus must lie in (0, 1); got {self.tau}, {list(self.taus)}")
        if not self.k_max or any(k < 1 for k in self.k_max):
            raise ConfigError(f"qa.k_max={list(self.k_max)}; allowed: whole numbers >= 1")
        if any(n < 0 for n in self.bank_sizes):
            raise ConfigError(f"qa.bank_sizes={list(self.bank_sizes)}; allowed: whole numbers >= 0")
        if not self.sets:
            raise ConfigError("[[qa.sets]] is empty; allowed: at least one evaluation set")
        bad_tools = [t for t in self.tools if t not in _QA_TOOLS]
        if bad_tools:
            raise ConfigError(f"qa.tools has {bad_tools}; allowed: {', '.join(_QA_TOOLS)}")
        if "lookup" in self.tools and not self.store:
            raise ConfigError(
                "qa.tools has lookup but qa.store is empty; allowed: the market store's path "
                '(relative: under the data root, e.g. store = "market.sqlite"), or drop lookup'
            )
        if ("ft_fm" in self.variants or self.taus) and not self.bank:
            raise ConfigError("ft_fm or a tau sweep needs [[qa.bank]] sources (training splits)")
        for s in self.bank:
            if s.split in ("test",):
                raise ConfigError(
                    f"qa.bank source {s.label!r} uses split 'test'; the bank reads train/validation only"
                )
        self._check_protocol_points()
        from agent.reproduce.qa.authors import check_authors_points

        check_authors_points(self)
        self._check_solver()
        self._check_bounds()
        names = [a.name for a in self.arms]
        if len(set(names)) != len(names):
            raise ConfigError(f"qa.arms names {names} repeat; allowed: a distinct name per arm")
        for i, a in enumerate(self.arms):
            if a.bank_of and a.bank_of not in names[:i]:
                raise ConfigError(
                    f"qa.arms[{i}] ({a.name!r}): bank_of={a.bank_of!r}; allowed: the name of an arm "
                    f"before it ({', '.join(names[:i]) or 'none'})"
                )

    def _check_protocol_points(self) -> None:
        _one_of("corpus_scope", self.corpus_scope, CORPUS_SCOPES)
        _one_of("embedder", self.embedder, EMBEDDERS)
        _one_of("gold_evidence", self.gold_evidence, GOLD_EVIDENCE)
        _one_of("gold_format_hints", self.gold_format_hints, FORMAT_HINTS)
        _one_of("memory_block", self.memory_block, MEMORY_BLOCKS)
        _one_of("summary_view", self.summary_view, SUMMARY_VIEWS)
        _one_of("ocr", self.ocr, OCR_ENGINES)
        _within("directive_chars", self.directive_chars, 20, 2000, unset=False)
        _within("max_directives", self.max_directives, 1, 20, unset=False)
        _within("entry_chars", self.entry_chars, 20, 4000, unset=False)
        _within("summary_chars", self.summary_chars, 50, 20_000, unset=False)
        _within("summary_temperature", self.summary_temperature, 0.0, 2.0, unset=False)
        if self.lesson_chars and not 20 <= self.lesson_chars <= 2000:
            raise ConfigError(f"qa.lesson_chars={self.lesson_chars}; allowed: 0 (no bound) or 20..2000")
        _within("max_lessons", self.max_lessons, 0, 10, unset=False)
        _within("summary_max_tokens", self.summary_max_tokens, 16, 131_072)
        if (not self.lesson_chars or not self.max_lessons) and self.summary_max_tokens is None:
            raise ConfigError(
                "qa.lesson_chars or qa.max_lessons is 0 (no bound), so the summary reply has no "
                "worst case; allowed: set qa.summary_max_tokens (e.g. 8192) or bound both"
            )

    def _check_solver(self) -> None:
        _within("temperature", self.temperature, 0.0, 2.0)
        _within("base_temperature", self.base_temperature, 0.0, 2.0)
        if self.seed is not None and self.seed < 0:
            raise ConfigError(f"qa.seed={self.seed}; allowed: a whole number >= 0 or unset")
        _within("max_tokens", self.max_tokens, 16, 131_072)
        for key in ("plan_chars", "answer_chars", "base_reasoning_chars", "arg_chars"):
            _within(key, getattr(self, key), 10, 20_000)
        _within("context_chars", self.context_chars, 0, 10_000_000)
        _within("max_prompt_chars", self.max_prompt_chars, 1000, 10_000_000)
        _within("max_bad_replies", self.max_bad_replies, 1, 16)
        _within("max_images", self.max_images, 0, 64)

    def _check_bounds(self) -> None:
        from agent.qa.solver.toolset import ToolsetConfig

        if self.holdout_seed < 0:
            raise ConfigError(f"qa.holdout_seed={self.holdout_seed}; allowed: a whole number >= 0")
        _within("memory_context_chars", self.memory_context_chars, 0, 100_000, unset=False)
        _within("judge_candidate_chars", self.judge_candidate_chars, 10, 100_000, unset=False)
        try:
            self.toolset_bounds(ToolsetConfig)
        except ConfigError as exc:  # the message names the plan's key
            said = str(exc).replace("ToolsetConfig.", "qa.").replace("qa.text_chars", "qa.tool_text_chars")
            raise ConfigError(said) from None

    def toolset_bounds(self, make: Any = dict) -> Any:
        """The tool bounds this plan sets, as :class:`agent.qa.solver.toolset.ToolsetConfig` keywords
        (``make``: what to build from them)."""
        return make(
            text_chars=self.tool_text_chars,
            corpus_text_chars=self.corpus_text_chars,
            corpus_shown_chars=self.corpus_shown_chars,
            corpus_max_k=self.corpus_max_k,
            lookup_max_listed=self.lookup_max_listed,
            lookup_max_window=self.lookup_max_window,
            ocr_max_side=self.ocr_max_side,
        )

    @property
    def needs_bank(self) -> bool:
        return "ft_fm" in self.variants or bool(self.taus)

    @property
    def needs_tools(self) -> bool:
        """Whether anything runs the tools (Base+FT, Base+FT+FM, or the bank build's solver)."""
        return bool({"ft", "ft_fm"} & set(self.variants)) or self.needs_bank

    @property
    def reads_gold(self) -> tuple[str, ...]:
        """The settings of this plan that read the gold answer or gold evidence at test time
        (their keys; empty: none)."""
        out = []
        if self.gold_format_hints != "none":
            out.append("gold_format_hints")
        if self.gold_evidence != "none":
            out.append("gold_evidence")
        return tuple(out)

    def store_path(self, data_root: Path) -> Path | None:
        """The market store of the lookup tool (None: no lookup)."""
        if "lookup" not in self.tools or not self.store:
            return None
        p = Path(self.store).expanduser()
        return p if p.is_absolute() else data_root / p

    @property
    def judge(self) -> str:
        """The judge model's registry key (``judge_model``, or ``model`` when unset)."""
        return self.judge_model or self.model

    @property
    def separate_judge(self) -> bool:
        """Whether the judge is another model than the solver's."""
        return self.judge != self.model

    @property
    def extractor(self) -> str:
        """The answer extractor's registry key (``extract_model``, or the judge's)."""
        return self.extract_model or self.judge

    def scorer_of(self, dataset: str) -> Any:
        """The :class:`agent.qa.scoring.scorers.ScorerSpec` this plan grades ``dataset`` by."""
        from agent.qa.scoring.scorers import scorer_spec

        return scorer_spec(dataset, self.scorer.get(dataset))

    def _sources(self) -> list[QASource]:
        return [*self.sets, *(self.bank if self.needs_bank else ())]

    @property
    def needs_judge(self) -> bool:
        """Whether anything this plan runs is judged (a judged set, or a judged bank source)."""
        return any(self.scorer_of(s.dataset).judge_prompt for s in self._sources())

    @property
    def needs_extract(self) -> bool:
        """Whether anything this plan runs is scored through the answer extractor."""
        return any(self.scorer_of(s.dataset).extract for s in self._sources())

    def solver_overrides(self) -> dict[str, Any]:
        """The solver settings this plan fixes (:class:`agent.qa.solver.solver_config.SolverConfig`
        fields); an unset key keeps the model's default (:func:`agent.qa.solver.react.solver_config_for`)."""
        out: dict[str, Any] = {
            "max_steps": self.max_steps,
            "base_mode": self.base,
            "base_max_tokens": self.base_max_tokens,
            "thought_chars": self.thought_chars,
            "observation_chars": self.observation_chars,
            "gate_rejections": self.gate_rejections,
            "action_schema": self.action_schema,
            "gate": self.gate,
            "loop": self.loop,
            "answer_reading": self.answer_reading,
            "base_reading": self.base_reading,
        }
        for key in (
            "max_tokens", "plan_chars", "answer_chars", "base_reasoning_chars", "arg_chars",
            "context_chars", "max_prompt_chars", "max_bad_replies", "answer_patterns", "send_images",
            "max_images", "scale_datasets", "base_temperature",
        ):  # fmt: skip
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out

    def sampling_overrides(self) -> dict[str, Any]:
        """The solver's sampling fields this plan sets (temperature, seed)."""
        return {k: v for k, v in (("temperature", self.temperature), ("seed", self.seed)) if v is not None}


@dataclass(frozen=True)
class QAArm:
    """One arm (``[[qa.arms]]``): the plan again with some of its keys changed, run into its own
    folder (``arms/<name>``), its rows labelled with its name.

    name: the arm's name (a folder and a report column; lower-case letters, digits, ``_``, ``-``).
    title: what the arm changes, in words (the report).
    bank_of: an earlier arm whose bank this arm reads (it builds none); "" = its own bank.
    set: the ``[qa]`` keys this arm changes (a ``protocol`` key also re-derives the protocol's
        group keys the ``[qa]`` table leaves unset).
    """

    name: str
    title: str = ""
    bank_of: str = ""
    set: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import re

        if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,39}", self.name):
            raise ConfigError(f"qa.arms name={self.name!r}; allowed: lower-case letters, digits, '_', '-'")
        bad = [k for k in self.set if k in ("arms", "bank", "sets", "model")]
        if bad:
            raise ConfigError(
                f"qa.arms {self.name!r} sets {bad}; allowed: any [qa] key but arms, bank, sets and model"
            )


def arm_plan(plan: QAPlan, arm: QAArm, explicit: frozenset[str]) -> QAPlan:
    """``plan`` as ``arm`` runs it: the arm's keys, and, when the arm names another protocol,
    that protocol's values for its group keys that neither the ``[qa]`` table (``explicit``)
    nor the arm sets. Checked as a whole plan (errors name the arm)."""
    from agent.reproduce.qa.protocols import protocol_values
    from localfin import configfile as cf

    raw = {**cf.plain(plan), "arms": []}
    proto = arm.set.get("protocol", plan.protocol)
    if proto != plan.protocol:
        _one_of(f"arms.{arm.name}.protocol", proto, PROTOCOLS)
        raw.update(
            {k: v for k, v in protocol_values(proto).items() if k not in explicit and k not in arm.set}
        )
    raw.update(arm.set)
    return cf.load(QAPlan, cf.plain(raw), key=f"qa.arms.{arm.name}")
