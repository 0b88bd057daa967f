"""The Financial Tools of one run: which tools each question gets, built per question.

FinAcumen's four tools (§4.4, G.2) are the Numerical Reasoning Engine (``python``: sandboxed,
stateful, :class:`agent.qa.tools.python_tool.PythonTool`), Grounded Data Retrieval
(``lookup``: market data, :class:`agent.qa.tools.lookup.LookupTool`, when a market store is
given; and, for a benchmark that ships its own corpus, FinTMMBench, ``retrieve`` over that
corpus, :class:`agent.qa.tools.corpus.RetrieveTool`, when its folder is given), the Visual
Structure Decoder (the OCR transcriptions put before the loop, :func:`ocr_transcriber`, and
``reparse``: OCR of the question's own images again, :class:`agent.qa.tools.ocr.ReparseImageTool`,
for questions that have images) and the Answer Consolidation Gate (``final_answer`` through
:mod:`agent.qa.solver.gate`, always there). The same factory serves Base+FT and Base+FT+FM, so the tool
suite and the calling protocol are identical in both.

Installed plugins add tools (entry-point group ``localfin.tools``, :mod:`agent.qa.data.extensions`):
a name in ``names`` that is a plugin's gives every question a fresh
:class:`~agent.qa.data.extensions.PluginTool` around it.

Where the Python sandbox cannot isolate code, ``python_unavailable="raise"`` (default) stops
the run with the sandbox's error; ``"refuse"`` keeps the tool, which then refuses every call
(the model sees the refusal), so an evaluation can still run without it. Model code never runs
unisolated either way.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from agent.data.store import MarketStore
from agent.qa.core.items import Question
from agent.qa.data.extensions import BUILTIN_TOOLS, TOOLS_REGISTRY, PluginTool, tool_names, tool_plugin
from agent.qa.sandbox import SandboxConfig
from agent.qa.tools import corpus as corpus_tool
from agent.qa.tools import lookup as lookup_tool
from agent.qa.tools.base import MAX_TOOL_TEXT, Tool, ToolResult, bounded
from agent.qa.tools.corpus import Corpus, RetrieveTool
from agent.qa.tools.lookup import LookupTool
from agent.qa.tools.ocr import MAX_SIDE, OcrEngine, ReparseImageTool, transcribe
from agent.qa.tools.python_tool import PythonTool
from localfin.errors import ConfigError

__all__ = [
    "TOOL_NAMES",
    "CORPUS_DATASETS",
    "CORPUS_SCOPES",
    "CORPUS_LOOKUPS",
    "ToolsetConfig",
    "Tools",
    "tool_factory",
    "ocr_transcriber",
]

log = logging.getLogger(__name__)

#: localfin's own tools; installed plugins may add more (:func:`agent.qa.data.extensions.tool_names`).
TOOL_NAMES = BUILTIN_TOOLS
#: Benchmarks whose questions get the ``retrieve`` tool over the benchmark's own corpus.
CORPUS_DATASETS = ("fintmmbench",)
#: ``own``: ``retrieve`` for the questions of :data:`CORPUS_DATASETS`; ``all``: for every question
CORPUS_SCOPES = ("own", "all")
#: ``bm25``: our search over the corpus; ``exact``: the authors' exact-filter lookup
CORPUS_LOOKUPS = ("bm25", "exact")


@dataclass(frozen=True)
class ToolsetConfig:
    """Which tools and how.

    Attributes:
        names: tools to offer, from :data:`TOOL_NAMES` or the installed plugins' tools
            (``lookup`` also needs ``store_path``,
            ``retrieve`` ``corpus_path``; ``reparse`` is added only to questions with images,
            ``retrieve`` only to questions of :data:`CORPUS_DATASETS`).
        store_path: the market store the lookup tool reads.
        corpus_path: the FinTMMBench folder (``QA.json`` + ``data/``) whose corpus ``retrieve``
            searches.
        corpus_scope: which questions get ``retrieve``: ``own`` (those of
            :data:`CORPUS_DATASETS`) or ``all`` (every question, as the authors' lookup tool over
            FinTMMBench's data is offered to every benchmark's).
        python_unavailable: ``raise`` or ``refuse`` (see the module docstring).
        max_code_chars: longest code the model may send to the Python tool (characters).
        text_chars: most characters of one tool output shown to the model.
        corpus_text_chars: characters of a corpus row kept as its text (indexed and shown).
        corpus_shown_chars: characters of one ``retrieve`` result's text shown.
        corpus_max_k: most results one ``retrieve`` call may ask for.
        lookup_max_listed: most sessions ``lookup`` lists one by one (a longer period is
            summarised).
        lookup_max_window: longest ``window`` (sessions) a ``lookup`` call may ask for.
        ocr_max_side: longest image side the OCR engine reads (pixels; larger images shrink).
        corpus_lookup: what ``retrieve`` is over the corpus: ``bm25`` (our search,
            :class:`agent.qa.tools.corpus.RetrieveTool`) or ``exact`` (the authors' exact-filter
            ``financial_data_lookup``, :class:`agent.qa.tools.fin_lookup.FinancialDataLookupTool`).
        loop: ``ours`` or ``authors``: under the authors' loop ``reparse`` is their
            ``ocr_extract``, answered from the transcriptions made before the loop (every question
            gets it, as theirs), and the lookup's hints are in their words (``authors_code``).
        authors_code: the authors' checkout (``loop = "authors"``).
    """

    names: tuple[str, ...] = TOOL_NAMES
    store_path: Path | None = None
    corpus_path: Path | None = None
    python_unavailable: str = "raise"
    max_code_chars: int = 2000
    corpus_scope: str = "own"
    text_chars: int = MAX_TOOL_TEXT
    corpus_text_chars: int = corpus_tool.TEXT_CHARS
    corpus_shown_chars: int = corpus_tool.SHOWN_CHARS
    corpus_max_k: int = corpus_tool.MAX_K
    lookup_max_listed: int = lookup_tool.MAX_LISTED
    lookup_max_window: int = lookup_tool.MAX_WINDOW
    ocr_max_side: int = MAX_SIDE
    corpus_lookup: str = "bm25"
    loop: str = "ours"
    authors_code: str = ""
    authors_code_verify: bool = True

    def __post_init__(self) -> None:
        bad = [n for n in self.names if n not in TOOL_NAMES]
        if bad:
            known = tool_names()  # the installed plugins' too (read only when needed)
            bad = [n for n in bad if n not in known]
            if bad:
                raise ConfigError(f"ToolsetConfig.names has {bad}; allowed: {', '.join(known)}")
        if len(set(self.names)) != len(self.names):
            raise ConfigError(f"ToolsetConfig.names={list(self.names)} repeats a tool")
        if self.python_unavailable not in ("raise", "refuse"):
            raise ConfigError(
                f"ToolsetConfig.python_unavailable={self.python_unavailable!r}; allowed: raise, refuse"
            )
        if self.corpus_scope not in CORPUS_SCOPES:
            raise ConfigError(
                f"ToolsetConfig.corpus_scope={self.corpus_scope!r}; allowed: {', '.join(CORPUS_SCOPES)}"
            )
        if self.corpus_lookup not in CORPUS_LOOKUPS:
            raise ConfigError(
                f"ToolsetConfig.corpus_lookup={self.corpus_lookup!r}; allowed: {', '.join(CORPUS_LOOKUPS)}"
            )
        if self.loop not in ("ours", "authors"):
            raise ConfigError(f"ToolsetConfig.loop={self.loop!r}; allowed: ours, authors")
        if not 10 <= self.max_code_chars <= 1_000_000:
            raise ConfigError(f"ToolsetConfig.max_code_chars={self.max_code_chars}; allowed: 10..1000000")
        for key, lo, hi in _BOUNDS:
            if not lo <= getattr(self, key) <= hi:
                raise ConfigError(f"ToolsetConfig.{key}={getattr(self, key)}; allowed: {lo}..{hi}")


#: the allowed range of each numeric bound of :class:`ToolsetConfig` (plans check the same)
_BOUNDS = (
    ("text_chars", 200, 100_000),
    ("corpus_text_chars", 100, 100_000),
    ("corpus_shown_chars", 50, 20_000),
    ("corpus_max_k", 1, 100),
    ("lookup_max_listed", 1, 5040),
    ("lookup_max_window", 3, 50_000),
    ("ocr_max_side", 100, 20_000),
)


class _Bounded:
    """A tool whose outputs are cut to the toolset's ``text_chars`` (its other attributes are
    the tool's own)."""

    def __init__(self, tool: Any, limit: int) -> None:
        self._tool, self._limit = tool, limit
        self.name, self.description, self.args_schema = tool.name, tool.description, tool.args_schema

    def __call__(self, args: Any) -> ToolResult:
        return bounded(self._tool(args), self._limit)

    def close(self) -> None:
        self._tool.close()

    def __getattr__(self, key: str) -> Any:
        return getattr(self._tool, key)


class _Owning:
    """A tool that also closes a resource it was built on (the lookup tool's store)."""

    def __init__(self, tool: Any, resource: Any) -> None:
        self._tool, self._resource = tool, resource
        self.name, self.description, self.args_schema = tool.name, tool.description, tool.args_schema

    def __call__(self, args: Any) -> ToolResult:
        return self._tool(args)

    def close(self) -> None:
        try:
            self._tool.close()
        finally:
            self._resource.close()


def tool_factory(config: ToolsetConfig | None = None) -> Tools:
    """A per-question factory of the configured tools (checked once here, so a missing sandbox
    or store fails before any model call)."""
    cfg = config or ToolsetConfig()
    makers: list[Callable[[Question], Tool | None]] = []
    if "python" in cfg.names:
        sandbox = SandboxConfig(max_code_chars=cfg.max_code_chars)
        PythonTool(sandbox, on_unavailable=cfg.python_unavailable).close()  # type: ignore[arg-type]
        makers.append(
            lambda q: PythonTool(sandbox, on_unavailable=cfg.python_unavailable, text_chars=cfg.text_chars)  # type: ignore[arg-type]
        )
    if "lookup" in cfg.names and cfg.store_path is not None:
        path = Path(cfg.store_path)
        MarketStore(path, create=False).close()

        def lookup(q: Question) -> Tool:
            store = MarketStore(path, create=False)
            tool = LookupTool(store, max_listed=cfg.lookup_max_listed, max_window=cfg.lookup_max_window)
            return _Owning(tool, store)

        makers.append(lookup)
    elif "lookup" in cfg.names:
        log.info("lookup tool left out: no market store given")
    code = None
    if cfg.loop == "authors":
        from agent.qa.authors.checkout import open_authors_code

        code = open_authors_code(cfg.authors_code, verify=cfg.authors_code_verify)
    if "retrieve" in cfg.names and cfg.corpus_path is not None:
        every = cfg.corpus_scope == "all"
        if cfg.corpus_lookup == "exact":
            from agent.qa.tools.fin_lookup import FinancialDataLookupTool, FinCorpus, our_hints

            rows = FinCorpus(cfg.corpus_path)  # loaded and indexed once, read-only
            if code is not None:
                from agent.qa.authors.tool_texts import lookup_hints

                hints = lookup_hints(code)
            else:
                hints = our_hints
            log.info("financial_data_lookup over %s", cfg.corpus_path)

            def exact(q: Question) -> Tool | None:
                if not every and q.dataset not in CORPUS_DATASETS:
                    return None
                return FinancialDataLookupTool(rows, hints)

            makers.append(exact)
        else:
            corpus = Corpus.load(cfg.corpus_path, cfg.corpus_text_chars)  # loaded and indexed once, read-only
            log.info("retrieve tool over %s: %s", cfg.corpus_path, corpus.describe())

            def retrieve(q: Question) -> Tool | None:
                if not every and q.dataset not in CORPUS_DATASETS:
                    return None
                return RetrieveTool(corpus, shown_chars=cfg.corpus_shown_chars, max_k=cfg.corpus_max_k)

            makers.append(retrieve)
    elif "retrieve" in cfg.names:
        log.info("retrieve tool left out: no benchmark corpus given")
    if "reparse" in cfg.names and cfg.loop == "authors":
        makers.append(lambda q: OcrExtractStandIn())
    elif "reparse" in cfg.names:
        engines: list[Any] = []  # the OCR engine is loaded at the first question with images

        def reparse(q: Question) -> Tool | None:
            if not q.images:
                return None

            if not engines:
                engines.append(_shared_engine(cfg.ocr_max_side))
            return ReparseImageTool(q.images, engine=engines[0])

        makers.append(reparse)

    for name in cfg.names:
        plugin = tool_plugin(name) if name not in TOOL_NAMES else None
        if plugin is not None:
            origin = TOOLS_REGISTRY.origin(name)
            log.info("tool %s from %s", name, origin)
            makers.append(lambda q, plugin=plugin, origin=origin: PluginTool(plugin, origin))

    return Tools(cfg, makers)


class Tools:
    """A per-question factory of the tools of ``config`` (a :data:`agent.qa.solver.react.ToolFactory`);
    ``config`` goes with it, so a cluster run can build the same tools on another node."""

    def __init__(self, config: ToolsetConfig, makers: Sequence[Callable[[Question], Tool | None]]) -> None:
        self.config = config
        self._makers = list(makers)

    def __call__(self, question: Question) -> Sequence[Tool]:
        made = (m(question) for m in self._makers)
        return [_Bounded(t, self.config.text_chars) for t in made if t is not None]


class OcrExtractStandIn:
    """The authors' ``ocr_extract`` under their loop: offered to every question; its calls are
    answered by the loop from the transcriptions made before it
    (:mod:`agent.qa.solver.authors_loop`), so calling it here is an error."""

    name = "ocr_extract"
    description = "OCR of the question's images (answered from the transcriptions made before the loop)."
    args_schema: ClassVar[dict[str, Any]] = {
        "type": "object",
        "properties": {"use_context_image": {"type": "boolean"}},
    }

    def __call__(self, args: Any) -> ToolResult:
        return ToolResult(False, "ocr_extract is answered by the authors' loop", (), "refused")

    def close(self) -> None:
        return None


def _shared_engine(max_side: int = MAX_SIDE) -> Any:
    """One OCR engine (its models loaded once) shared by every question of a run."""

    return OcrEngine(max_side=max_side)


def ocr_transcriber(engine: Any | None = None, max_side: int = MAX_SIDE) -> Callable[[str], str]:
    """OCR of one image into structured text (the transcription put before the loop); the
    engine reads images at most ``max_side`` pixels on their longest side."""

    eng = engine if engine is not None else _shared_engine(max_side)

    def run(path: str) -> str:
        return transcribe(path, engine=eng).text()

    return run
