"""Moira experiment configuration: frozen dataclasses, loaded from TOML.

One experiment = one store, one pool, one training window and one test window, run for every
seed x exposure x variant (each such run is one lockstep program). Every field below has a
default; a TOML file only names what it changes. Validation happens in ``__post_init__`` and
every error names the file and the TOML key and the allowed values. Files go through the one
config layer (:mod:`localfin.configfile`): each table is validated by pydantic in strict mode
against its dataclass (unknown keys are errors, so a typo never silently falls back to a
default; element and nested types are checked).

Layout of a config file (all tables optional except ``[experiment]`` and ``[windows]``)::

    [experiment]   name, store, pool, seeds, exposures, pairing, cost_bps, no_beta_legs,
                   beta_window, execution, slippage_bps, borrow_bps_per_year
                   (agent.pairs.market.execution: how decisions are filled and what fills cost;
                   defaults: the papers' close-to-close at no cost), anonymize (aliases for
                   tickers and names in every prompt; default false)
    [windows]      train_start, train_end, test_start, test_end   (YYYY-MM-DD, inclusive)
    [model]        backbone, backend, base_url, server_default, temperature, top_p,
                   repetition_penalty, thinking, max_num_seqs, kv_cache_gib, chunk_size,
                   request_timeout_s, max_retries, retry_backoff_s, retry_backoff_max_s,
                   max_failures_in_a_row (faults: docs/faults.md), decoding, max_model_len
    [model.max_tokens]  pair_selection, direction, reflection, break_check, news_verify
    [prompt]       dir (the user's own prompt files), reason_max_chars, principle_max_chars,
                   principle_min_chars, reflection_max_chars, news_per_leg,
                   news_lookback_sessions, direction_news, headline_max_chars, news_token_budget,
                   block_order,
                   description_max_chars, memory_records, reflection_max_records,
                   pair_quality_min_held, pair_quality_reverting, pair_quality_weak,
                   spread_far_z, spread_near_z
    [policy]       max_cycles, stop_after_rejections, max_principles, consolidation,
                   warmup_floor, carry_pair_memory, reflection_feedback, direction_rule,
                   principle_min_words, principle_rules
    [selection]    fallback, reselection, fixed_pair
    [screen]       any field of agent.pairs.screen.causal.ScreenConfig
    [lifecycle]    any field of agent.pairs.lifecycle.machine.LifecycleConfig
    [[variants]]   name, and any of consolidation / reselection / fixed_pair (per-variant
                   overrides of [policy] / [selection]; default: one variant "full")
    [baselines]    methods (default: all six; [] = none) and per-method tables
                   [baselines.eg_z], [baselines.eg_ddqn], [baselines.finmem] (see
                   agent.pairs.baselines.config): the baselines run on the same store, pool, screen,
                   windows, exposures, seeds and cost, in the same experiment folder

``[prompt] dir`` is resolved against the file's folder like ``store``, and every prompt file in
it is checked against the packaged format when the file is loaded (before any model call).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from agent.pairs.baselines.config import BaselinesConfig, parse_baselines
from agent.pairs.lifecycle.config import LifecycleConfig
from agent.pairs.market.execution import ExecutionSettings
from agent.pairs.market.settlement import EXPOSURES, NO_BETA_LEGS
from agent.pairs.moira.config import (
    DECODINGS,
    MaxTokens,
    PolicyConfig,
    PromptConfig,
    SelectionConfig,
    Variant,
)
from agent.pairs.screen.causal import ScreenConfig
from localfin import configfile as cf
from localfin import env
from localfin.errors import ConfigError
from serving.chat.types import Sampling
from serving.engines.engine_args import check_engine_fields, engine_pins
from serving.engines.vllm_engine import EngineOptions
from serving.open import BACKEND_KINDS, BackendSpec, backend_kinds

__all__ = [
    "PAIRINGS",
    "ModelConfig",
    "WindowConfig",
    "ExperimentConfig",
    "load_config",
    "parse_config",
    "config_to_dict",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: What the runs of one seed under the two exposures share (:class:`ExperimentConfig` ``pairing``).
PAIRINGS = ("paired", "independent")


@dataclass(frozen=True)
class ModelConfig:
    """Which model answers, and how it samples.

    backbone: registry key (``localfin models list``).
    backend: ``vllm`` (in-process engine), ``openai`` (a running ``vllm serve`` at base_url) or
        the kind of an installed backend plugin.
    base_url: the server for ``openai`` (e.g. http://127.0.0.1:8000/v1).
    server_default: the papers' "server-default sampling" (Moira Appendix C): every sampling
        field this table leaves unset (temperature, top_p, repetition_penalty) is left to the
        engine, which applies the model's own generation config (vLLM ``generation_config=
        "auto"``, ``vllm serve --generation-config auto``); the run seed still goes in every
        request. False: our explicit settings (unset temperature = 0, top_p = 1).
    temperature: sampling temperature of every call (0: greedy; seeds then change nothing;
        unset: 0, or the model's with server_default).
    top_p: nucleus mass (unset: 1, or the model's with server_default).
    repetition_penalty: None = the registry default of the backbone (1.15 for the CPU model;
        1.0 = none for the GPU entries, so with server_default the model's own).
    thinking: Qwen3 thinking switch (None = the registry default).
    max_num_seqs, kv_cache_gib: engine settings of the in-process backend.
    chunk_size: requests per engine call and per journal transaction (large enough that each
        lockstep round is one engine call).
    request_timeout_s: ``openai``: seconds one request may take (unset: the registry's, 600).
    max_retries, retry_backoff_s, retry_backoff_max_s: ``openai``: retries of a transient
        failure (connection refused or reset, timeout, HTTP 408/429/502/503/504), the first
        delay (doubling) and the longest one, in seconds; when they are spent the run stops at a
        call boundary (exit code 4) and resumes with ``--resume`` (see "Faults and recovery").
    max_failures_in_a_row: requests the engine or server fails outright in a row (each its
        recorded fallback) before the run stops (exit code 1).
    decoding: how the agent's five calls are decoded and read, one of ``schema`` (default; the
        CPU configs):
        each reply schema goes to the engine as structured outputs; ``prompt`` (the
        reproduction configs): the paper's way, JSON asked for in the prompt only, the final
        text (after any reasoning) read for its JSON object and checked against the schema,
        the training reflection in the paper's text form, a reply that does not parse a
        recorded fallback with its text. FinMem's calls follow it too (``[baselines.finmem]
        decoding`` may set their own).
    max_model_len: ``vllm``: the engine's context in tokens (unset: the registry entry's); the
        placement budgets the KV cache of one sequence this long, and FinMem, when it runs on
        the backbone, checks each prompt against it before the call.
    quantization: ``vllm``: a declared weight quantization of the engine, ``fp8`` (vLLM
        ``--quantization fp8``: 8-bit weights quantized at load, half the memory of bf16, on
        Hopper GPUs and newer; not the weights the papers ran) or "" (the checkpoint's own).
    pipeline_parallel: ``vllm``: declared pipeline stages of the engine (1: none; more lets a
        model too big for one node span nodes, which needs a Ray cluster).
    batch_invariant: ``vllm``: vLLM's batch-invariant kernels (``VLLM_BATCH_INVARIANT=1``): a
        reply no longer depends on which requests share its batch, so a resumed GPU run's new
        replies equal an uninterrupted run's, at some speed (bf16 GPU kernels are otherwise not
        batch-invariant; see "Faults and recovery", Determinism).
    async_scheduling: ``vllm``: vLLM's asynchronous scheduling (its CUDA default), off until a
        GPU check validates it with structured outputs, the reasoning parser and seeded requests.
    max_num_batched_tokens: ``vllm``: tokens the engine schedules in one step (0: the device's
        default, 8,192 on a GPU; the in-process engine and ``vllm serve`` take the same).
    worker_start_method: ``vllm``: how the engine's processes start (``spawn``, as the CPU
        build always does; ``fork``, CUDA's default, copies a parent holding OpenMP and numba
        thread pools).
    """

    backbone: str = "smollm2-135m"
    backend: str = "vllm"
    base_url: str = ""
    server_default: bool = False
    temperature: float | None = None
    top_p: float | None = None
    repetition_penalty: float | None = None
    thinking: bool | None = None
    max_num_seqs: int = 64
    kv_cache_gib: int | None = None
    chunk_size: int = 256
    request_timeout_s: float | None = None
    max_retries: int = 4
    retry_backoff_s: float = 1.0
    retry_backoff_max_s: float = 30.0
    max_failures_in_a_row: int = 8
    quantization: str = ""
    pipeline_parallel: int = 1
    batch_invariant: bool = False
    async_scheduling: bool = False
    worker_start_method: str = "spawn"
    max_num_batched_tokens: int = 0
    max_tokens: MaxTokens = field(default_factory=MaxTokens)
    decoding: str = "schema"
    max_model_len: int | None = None

    def __post_init__(self) -> None:
        if not self.backbone:
            raise ConfigError("model.backbone is empty; allowed: a registry key such as smollm2-135m")
        if self.backend not in BACKEND_KINDS and self.backend not in backend_kinds():
            raise ConfigError(f"model.backend={self.backend!r}; allowed: {', '.join(backend_kinds())}")
        if self.backend == "openai" and not self.base_url:
            raise ConfigError("model.base_url is required when model.backend = 'openai'")
        if self.temperature is not None and not 0.0 <= self.temperature <= 2.0:
            raise ConfigError(f"model.temperature={self.temperature}; allowed: 0..2 or unset")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ConfigError(f"model.top_p={self.top_p}; allowed: (0, 1] or unset")
        if self.repetition_penalty is not None and not 1.0 <= self.repetition_penalty <= 2.0:
            raise ConfigError(f"model.repetition_penalty={self.repetition_penalty}; allowed: 1..2 or unset")
        if self.max_num_seqs < 1:
            raise ConfigError(f"model.max_num_seqs={self.max_num_seqs}; allowed: >= 1")
        if self.kv_cache_gib is not None and self.kv_cache_gib < 1:
            raise ConfigError(f"model.kv_cache_gib={self.kv_cache_gib}; allowed: >= 1 or unset")
        if self.chunk_size < 1:
            raise ConfigError(f"model.chunk_size={self.chunk_size}; allowed: >= 1")
        if self.request_timeout_s is not None and not self.request_timeout_s > 0:
            raise ConfigError(f"model.request_timeout_s={self.request_timeout_s}; allowed: > 0 or unset")
        if self.max_retries < 0:
            raise ConfigError(f"model.max_retries={self.max_retries}; allowed: >= 0")
        if not 0 <= self.retry_backoff_s <= self.retry_backoff_max_s:
            raise ConfigError(
                f"model.retry_backoff_s={self.retry_backoff_s}, retry_backoff_max_s="
                f"{self.retry_backoff_max_s}; allowed: 0 <= retry_backoff_s <= retry_backoff_max_s"
            )
        if self.max_failures_in_a_row < 1:
            raise ConfigError(f"model.max_failures_in_a_row={self.max_failures_in_a_row}; allowed: >= 1")
        if self.decoding not in DECODINGS:
            raise ConfigError(f"model.decoding={self.decoding!r}; allowed: {', '.join(DECODINGS)}")
        if self.max_model_len is not None and (
            isinstance(self.max_model_len, bool)
            or not isinstance(self.max_model_len, int)
            or not 256 <= self.max_model_len <= 10_000_000
        ):
            raise ConfigError(
                f"model.max_model_len={self.max_model_len!r}; allowed: 256..10000000 tokens or unset"
            )
        check_engine_fields(self, "model")

    def sampling(self, seed: int) -> Sampling:
        """The sampling of every call of a run with ``seed``."""
        return Sampling.of(self, seed)

    def backend_spec(self, model_path: str = "") -> BackendSpec:
        """The backend this table names (``model_path``: a weights folder for the backbone)."""
        engine = EngineOptions(
            max_num_seqs=self.max_num_seqs,
            kv_cache_gib=self.kv_cache_gib,
            max_failures_in_a_row=self.max_failures_in_a_row,
            max_model_len=self.max_model_len,
            **engine_pins(self),
        )
        if self.backend == "vllm":
            return BackendSpec("vllm", self.backbone, model_path=model_path, engine=engine)
        return BackendSpec(
            self.backend,
            self.backbone,
            base_url=self.base_url,
            engine=engine,
            max_retries=self.max_retries,
            timeout_s=self.request_timeout_s,
            backoff_s=self.retry_backoff_s,
            backoff_max_s=self.retry_backoff_max_s,
        )


@dataclass(frozen=True)
class WindowConfig:
    """Training and test windows (inclusive calendar dates; sessions come from the store).

    train_start: the first day of the training window (Moira's warm-up and replay cycles).
    train_end: the last day of the training window.
    test_start: the first day of the test window (the reported backtest), after ``train_end``.
    test_end: the last day of the test window.
    """

    train_start: dt.date
    train_end: dt.date
    test_start: dt.date
    test_end: dt.date

    def __post_init__(self) -> None:
        if self.train_start > self.train_end:
            raise ConfigError(f"windows.train_start={self.train_start} is after train_end={self.train_end}")
        if self.test_start > self.test_end:
            raise ConfigError(f"windows.test_start={self.test_start} is after test_end={self.test_end}")
        if self.test_start <= self.train_end:
            raise ConfigError(
                f"windows.test_start={self.test_start} must come after train_end={self.train_end}"
            )


@dataclass(frozen=True)
class ExperimentConfig:
    """A whole experiment. ``store`` is resolved against the config file's folder when relative.

    name: the experiment's name (its folder under ``$LOCALFIN_RUNS_DIR`` by default; letters,
        digits, ``_``, ``-``, ``.``).
    store: the market store (SQLite, ``localfin data import``; default ``$LOCALFIN_STORE``).
    pool: tickers the screen chooses pairs from ([] = every ticker of the store).
    seeds: one run per seed (and exposure and variant); every request carries its run's seed
        (under ``independent`` pairing, one derived from it).
    exposures: ``no_beta`` (equal-magnitude legs) and/or ``beta`` (hedge-ratio legs): the
        papers' two exposure settings, one run each.
    pairing: what the runs of one seed under the two exposures share:
        ``paired`` (the default): ONE training phase (it sizes with No-Beta whatever the run's
        exposure, as the paper trains) and, through it, one first test selection, so each
        seed's Beta and No-Beta runs differ only in sizing and in what follows from it: a
        Beta-against-No-Beta difference is a paired comparison. ``independent``: every exposure
        trains on its own, selects its own first pair and draws its own seed stream (its
        requests carry a seed derived from the run's seed and exposure), so the two exposures
        of a seed are independent replications. The paper reports three independent runs per
        setting and does not say whether runs of one seed shared anything across exposures.
    beta_window: sessions of the Beta exposure's rolling OLS hedge ratio, for the agent and
        every baseline (paper §4.1: 20).
    cost_bps: fee per unit of turnover in basis points (the papers': 0).
    slippage_bps: slippage per unit of turnover in basis points (the papers': 0).
    borrow_bps_per_year: yearly borrow fee on the short leg in basis points (the papers': 0).
    no_beta_legs: how the No-Beta exposure's "equal-magnitude share legs" are sized:
    ``equal_shares`` (the default: one share of each leg, the paper's words, §4.1) or
    ``dollar_neutral`` (+-0.5 of capital, the CPU configs' reading). Training and the baselines
    use it too.
    """

    name: str
    store: Path
    windows: WindowConfig
    pool: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    exposures: tuple[str, ...] = EXPOSURES
    pairing: str = "paired"
    cost_bps: float = 0.0
    no_beta_legs: str = "equal_shares"
    beta_window: int = 20
    model: ModelConfig = field(default_factory=ModelConfig)
    prompt: PromptConfig = field(default_factory=PromptConfig)
    screen: ScreenConfig = field(default_factory=ScreenConfig)
    lifecycle: LifecycleConfig = field(default_factory=LifecycleConfig)
    variants: tuple[Variant, ...] = (Variant(),)
    #: the baselines run beside the agent (none when built in code; every one by default in a file)
    baselines: BaselinesConfig = field(default_factory=lambda: BaselinesConfig(methods=()))
    #: ``close`` (the papers') or ``next_open``; with the costs below, every run's settlement
    execution: str = "close"
    slippage_bps: float = 0.0
    borrow_bps_per_year: float = 0.0
    #: memorization control: tickers and company names as stable aliases in every model-visible
    #: text of the agent's and FinMem's runs
    anonymize: bool = False

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise ConfigError(f"experiment.name={self.name!r}; allowed: letters, digits, '_', '-', '.'")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(
                f"experiment.seeds={list(self.seeds)}; allowed: distinct integers, at least one"
            )
        for s in self.seeds:
            if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31:
                raise ConfigError(f"experiment.seeds entry {s!r}; allowed: integers in 0..2^31-1")
        if not self.exposures or any(e not in EXPOSURES for e in self.exposures):
            raise ConfigError(f"experiment.exposures={list(self.exposures)}; allowed: {', '.join(EXPOSURES)}")
        if len(set(self.exposures)) != len(self.exposures):
            raise ConfigError(f"experiment.exposures={list(self.exposures)} repeats an entry")
        if self.no_beta_legs not in NO_BETA_LEGS:
            raise ConfigError(
                f"experiment.no_beta_legs={self.no_beta_legs!r}; allowed: {', '.join(NO_BETA_LEGS)}"
            )
        if self.pairing not in PAIRINGS:
            raise ConfigError(f"experiment.pairing={self.pairing!r}; allowed: {', '.join(PAIRINGS)}")
        if (
            isinstance(self.beta_window, bool)
            or not isinstance(self.beta_window, int)
            or not (3 <= self.beta_window <= 2520)
        ):
            raise ConfigError(f"experiment.beta_window={self.beta_window!r}; allowed: 3..2520 sessions")
        if not (math.isfinite(self.cost_bps) and 0.0 <= self.cost_bps <= 1000.0):
            raise ConfigError(f"experiment.cost_bps={self.cost_bps}; allowed: 0..1000 basis points")
        if len(self.pool) == 1 or len(set(self.pool)) != len(self.pool):
            raise ConfigError(
                f"experiment.pool={list(self.pool)}; allowed: empty (all) or >= 2 distinct tickers"
            )
        names = [v.name for v in self.variants]
        if not names or len(set(names)) != len(names):
            raise ConfigError(f"variants names {names}; allowed: at least one, all distinct")
        fm = self.baselines.finmem
        if (
            "finmem" in self.baselines.methods
            and fm.model != self.model.backbone
            and self.model.backend == "openai"
            and not fm.base_url
        ):
            raise ConfigError(
                f"baselines.finmem.model={fm.model!r} differs from model.backbone={self.model.backbone!r} "
                "with model.backend = 'openai': set baselines.finmem.base_url (the server of that model)"
            )
        if (
            "finmem" in self.baselines.methods
            and fm.model == self.model.backbone
            and fm.max_model_len != self.model.max_model_len
        ):
            raise ConfigError(
                f"baselines.finmem.max_model_len={fm.max_model_len!r} differs from model.max_model_len="
                f"{self.model.max_model_len!r}: FinMem runs in the backbone's engine ({fm.model!r}), whose "
                "context is model.max_model_len; set that one and leave baselines.finmem.max_model_len unset"
            )
        self.execution_settings()  # validates execution, slippage_bps, borrow_bps_per_year
        unbounded = {
            "reason_max_chars": ("pair_selection", "direction", "break_check", "news_verify"),
            "principle_max_chars": ("reflection",),
            "reflection_max_chars": ("reflection",),
        }
        for name, calls in unbounded.items():
            if getattr(self.prompt, name) == 0:
                auto = [c for c in calls if not self.model.max_tokens.for_call(c)]
                if auto:
                    raise ConfigError(
                        f"prompt.{name}=0 (no bound) needs an explicit model.max_tokens."
                        f"{auto[0]} (an automatic budget is the longest reply the schema allows, "
                        "and an unbounded field has none)"
                    )

    def execution_settings(self) -> ExecutionSettings:
        """How every run of the experiment (agent and baselines) is filled and charged."""
        return ExecutionSettings(self.execution, self.cost_bps, self.slippage_bps, self.borrow_bps_per_year)

    def finmem_backend_spec(self, model_path: str = "") -> BackendSpec | None:
        """The backend FinMem needs besides the backbone's: None unless FinMem runs with a fixed
        ``[baselines.finmem] model`` other than the backbone (same backend kind as ``[model]``;
        ``openai`` at ``[baselines.finmem] base_url``)."""
        fm = self.baselines.finmem
        if "finmem" not in self.baselines.methods or fm.model == self.model.backbone:
            return None
        if self.model.backend == "vllm":
            pins = {**engine_pins(self.model), "quantization": None, "pipeline_parallel": 1}
            engine = EngineOptions(
                max_num_seqs=self.model.max_num_seqs,
                kv_cache_gib=self.model.kv_cache_gib,
                max_model_len=fm.max_model_len,
                **pins,
            )
            return BackendSpec("vllm", fm.model, model_path=model_path, engine=engine)
        return BackendSpec(self.model.backend, fm.model, base_url=fm.base_url)

    def request_seed(self, seed: int, exposure: str) -> int:
        """The seed every model request of the run (``seed``, ``exposure``) carries: the run seed
        when ``pairing`` is ``paired``; for ``independent``, the first 31 bits of the SHA-256 of
        ``"<seed>/<exposure>"`` (a stream of its own per exposure, the same on every machine)."""
        if self.pairing == "paired":
            return seed
        digest = hashlib.sha256(f"{seed}/{exposure}".encode()).digest()
        return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF

    def run_ids(self) -> list[tuple[str, Variant, str, int]]:
        """``(run_id, variant, exposure, seed)`` of every run, in a fixed order."""
        return [
            (f"{v.name}-{e}-s{s}", v, e, s) for v in self.variants for e in self.exposures for s in self.seeds
        ]


# -- TOML --------------------------------------------------------------------------------------

#: The tables of an experiment file (``variants`` is an array of tables).
TABLES = (
    "experiment",
    "windows",
    "model",
    "prompt",
    "policy",
    "selection",
    "screen",
    "lifecycle",
    "variants",
    "baselines",
)
#: ExperimentConfig fields that come from other tables than ``[experiment]``.
_FROM_TABLES = ("windows", "model", "prompt", "screen", "lifecycle", "variants", "baselines")


def _variant(raw: Any, k: int, policy: dict[str, Any], selection: dict[str, Any], file: Any) -> Variant:
    """One ``[[variants]]`` entry: a name plus overrides of ``[policy]`` / ``[selection]``."""
    key = f"variants[{k}]"
    if not isinstance(raw, Mapping):
        raise cf.key_error(key, f"{raw!r}; allowed: a table", file=file)
    pol_keys = [f.name for f in fields(PolicyConfig)]
    sel_keys = [f.name for f in fields(SelectionConfig)]
    cf.check_keys(raw, ["name", *pol_keys, *sel_keys], key=key, file=file)
    own = cf.load(Variant, {"name": raw["name"]} if "name" in raw else {}, key=key, file=file)
    if "name" not in raw:
        raise ConfigError(
            f"{'file ' + str(file) + ', ' if file is not None else ''}key {key}.name is required"
        )
    pol = {**policy, **{n: raw[n] for n in pol_keys if n in raw}}
    sel = {**selection, **{n: raw[n] for n in sel_keys if n in raw}}
    return replace(
        own,
        policy=cf.load(PolicyConfig, pol, key=key, file=file),
        selection=cf.load(SelectionConfig, sel, key=key, file=file),
    )


def _absolute(path: str, base_dir: Path | None) -> str:
    """``path`` (``~`` expanded) as an absolute path: a relative one against ``base_dir`` (the
    config file's folder), else against the working directory. The config then names the same
    file wherever it is read from (the manifest records it; a run folder's copy states it)."""
    p = Path(path).expanduser()
    if not p.is_absolute() and base_dir is not None:
        p = base_dir / p
    return os.path.abspath(p)


def parse_config(
    data: Mapping[str, Any], *, base_dir: Path | None = None, file: str | Path | None = None
) -> ExperimentConfig:
    """An :class:`ExperimentConfig` from a parsed TOML document (relative ``store``, ``[prompt]
    dir`` and ``[baselines.finmem] prompt_dir`` paths are resolved against ``base_dir``, else the
    working directory, to absolute paths; ``file`` names the document in errors)."""
    cf.check_keys(data, TABLES, file=file)
    tables = {k: data.get(k, [] if k == "variants" else {}) for k in TABLES}
    for k, v in tables.items():
        if not isinstance(v, list if k == "variants" else Mapping):
            kind = "an array of tables" if k == "variants" else "a table"
            raise cf.key_error(k, f"{v!r}; allowed: {kind}", file=file)
    exp = dict(tables["experiment"])
    cf.check_keys(
        exp,
        [f.name for f in fields(ExperimentConfig) if f.name not in _FROM_TABLES],
        key="experiment",
        file=file,
    )
    store = exp.get("store")
    if store is None:
        exp["store"] = _absolute(str(env.default_store_path()), None)
    elif isinstance(store, str):
        exp["store"] = _absolute(store, base_dir)
    windows = cf.load(WindowConfig, tables["windows"], key="windows", file=file)
    prompt_table = dict(tables["prompt"])
    if isinstance(prompt_table.get("dir"), str) and prompt_table["dir"]:
        prompt_table["dir"] = _absolute(prompt_table["dir"], base_dir)
    baselines_table = tables["baselines"]
    finmem_table = baselines_table.get("finmem") if isinstance(baselines_table, Mapping) else None
    fm_dir = finmem_table.get("prompt_dir") if isinstance(finmem_table, Mapping) else None
    if isinstance(fm_dir, str) and fm_dir:
        finmem_table = {**finmem_table, "prompt_dir": _absolute(fm_dir, base_dir)}
        baselines_table = {**baselines_table, "finmem": finmem_table}
    prompt = cf.load(PromptConfig, prompt_table, key="prompt", file=file)
    if prompt.dir:
        from agent.pairs.experiment.manifest import PROMPTS
        from agent.prompting import check_prompt_dir

        try:
            check_prompt_dir(prompt.dir, PROMPTS)
        except ConfigError as exc:
            raise ConfigError(f"{'file ' + str(file) + ', ' if file is not None else ''}{exc}") from None
    model = cf.load(ModelConfig, tables["model"], key="model", file=file)
    policy = cf.load(PolicyConfig, tables["policy"], key="policy", file=file)
    selection = cf.load(SelectionConfig, tables["selection"], key="selection", file=file)
    variants = tuple(
        _variant(raw, k, dict(tables["policy"]), dict(tables["selection"]), file)
        for k, raw in enumerate(tables["variants"])
    ) or (Variant("full", policy, selection),)
    head = cf.load(ExperimentConfig, {**exp, "windows": tables["windows"]}, key="experiment", file=file)
    return replace(
        head,
        windows=windows,
        model=model,
        prompt=prompt,
        screen=cf.load(ScreenConfig, tables["screen"], key="screen", file=file),
        lifecycle=cf.load(LifecycleConfig, tables["lifecycle"], key="lifecycle", file=file),
        variants=variants,
        baselines=parse_baselines(baselines_table, model, file=file, prompt=prompt),
    )


def load_config(path: str | Path) -> ExperimentConfig:
    """Read and validate an experiment TOML file (errors name the file and the key)."""
    p = Path(path)
    return parse_config(cf.read_toml(p, "config"), base_dir=p.resolve().parent, file=p)


def config_to_dict(cfg: ExperimentConfig) -> dict[str, Any]:
    """A JSON-ready dict of the resolved config (for the manifest and the run records)."""

    def plain(value: Any) -> Any:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
        if isinstance(value, (list, tuple)):
            return [plain(v) for v in value]
        if isinstance(value, (dt.date, Path)):
            return str(value)
        return value

    return plain(cfg)
