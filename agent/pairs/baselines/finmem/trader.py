"""The FinMem baseline's daily loop (training then test) as a generator of model calls.

Per session t of a phase, in this order (everything uses data up to t; the decision made at
t - 1 has settled at t's close):

1. settle the previous decision (the shared :class:`agent.pairs.market.execution.Book`, the
   phase's exposure and the run's execution settings); its cited memory items get feedback by
   the sign of its realized return;
2. age the memory by the sessions that passed (decay, clean-up, promotion);
3. store today's items as FinMem's agent files them: news of both legs (short), each leg's
   10-Q (mid) and 10-K (long) filed since the previous session (a filing enters memory on the
   first session after its filing date, never on the day it is filed);
4. write the settled decision into the reflection layer: in training with the reflection
   call's lesson (its cited items get +1 feedback), otherwise as an outcome note with the
   decision's reason;
5. decide (not on the phase's last session): character from the settled returns, retrieval
   (top-k per layer), the decision call; FLAT without a call when the pair is not tradable.

Every call is checked against the served context before it is sent
(:class:`~agent.pairs.baselines.finmem.context.PromptBudget`), and a reply that fails
validation is asked once more (``reasks``), the re-ask counted with its call type.
:class:`AgentState` collects the test actions, notes and fallbacks, the tokens of every result
by call type and phase, and a per-session trace of the memory.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from agent.pairs.baselines.finmem.calls import (
    DECISION_CALL,
    CallSettings,
    Parsed,
    decision_request,
    parse_decision,
    parse_reflection,
    reask_request,
    reflection_request,
)
from agent.pairs.baselines.finmem.context import PromptBudget
from agent.pairs.baselines.finmem.memory import LAYERS, LayeredMemory, TextEmbedder, risk_character
from agent.pairs.baselines.finmem.observe import observations
from agent.pairs.baselines.finmem.texts import (
    FILING_LAYER,
    company_lines,
    filing_text,
    memory_payload,
    news_text,
    query_text,
)
from agent.pairs.market.execution import Book
from agent.pairs.market.masking import mask_text
from agent.pairs.market.newsbudget import fit_newest_first
from agent.pairs.market.provenance import ProvenanceLog
from agent.pairs.market.settlement import ACTIONS, FLAT, LONG_SHORT, leg_weights, no_beta_weights
from localfin.errors import ConfigError
from serving.chat.types import ChatRequest, ChatResult

__all__ = ["AgentState", "run_agent"]

Gen = Generator[list[ChatRequest], list[ChatResult], Any]
_NAN = float("nan")


@dataclass
class _Decision:
    index: int
    action: str
    reason: str = ""
    cited: list[int] = field(default_factory=list)
    #: the ids each layer recalled for the decision
    shown: dict[str, list[int]] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    called: bool = False
    #: (price, news) sessions of the memory shown with the decision
    sources: tuple[Any, Any] = ((), ())


def _counter() -> dict[str, int]:
    return {
        "calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cached_tokens": 0,
        "fallbacks": 0,
        "cut": 0,
        "replayed": 0,
        "reasks": 0,
    }


@dataclass
class AgentState:
    """What a run's loop produced (the test phase's actions are one per transition)."""

    actions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    fallback_steps: list[bool] = field(default_factory=list)
    #: the request key of each test step's decision call ("" where no call was made)
    test_keys: list[str] = field(default_factory=list)
    #: every model call of the run: phase, call type, request key (the journal's key)
    calls: list[dict[str, str]] = field(default_factory=list)
    settled_returns: list[float] = field(default_factory=list)
    tokens: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    fallback_reasons: Counter = field(default_factory=Counter)
    characters: dict[str, Counter] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    cited_decisions: int = 0
    decisions: int = 0
    memory_max: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LAYERS, 0))
    memory_final: dict[str, int] = field(default_factory=dict)
    moves: dict[str, int] = field(default_factory=dict)
    #: what each call's payload drew from (agent.pairs.market.provenance)
    provenance: ProvenanceLog = field(default_factory=lambda: ProvenanceLog(""))
    #: decision prompts whose recalled news the news budget cut, and the items it left out
    news_cuts: int = 0
    news_omitted: int = 0
    #: chat tokens (prompt + completion) of the test phase's calls by 1-based session step
    test_step_tokens: Counter = field(default_factory=Counter)

    def count(
        self, result: ChatResult, phase: str, fallback: bool, step: int = 0, reask: bool = False
    ) -> None:
        c = self.tokens.setdefault(phase, {}).setdefault(result.call_type, _counter())
        u = result.usage
        c["calls"] += 1
        c["reasks"] += int(reask)
        c["prompt_tokens"] += u.prompt_tokens
        c["completion_tokens"] += u.completion_tokens
        c["cached_tokens"] += u.cached_tokens
        c["fallbacks"] += int(fallback)
        c["cut"] += int(result.finish_reason == "length")
        c["replayed"] += int(result.from_journal)
        self.calls.append({"phase": phase, "call_type": result.call_type, "request_key": result.request_key})
        if phase == "test" and step > 0:
            self.test_step_tokens[step] += u.prompt_tokens + u.completion_tokens

    def summary(self, n_transitions: int) -> dict[str, Any]:
        by_type: dict[str, dict[str, int]] = {}
        for phase in self.tokens.values():
            for k, v in phase.items():
                t = by_type.setdefault(k, _counter())
                for key in t:
                    t[key] += v[key]
        test = self.tokens.get("test", {})
        per_step = {
            k: (v["prompt_tokens"] + v["completion_tokens"]) / n_transitions if n_transitions else None
            for k, v in test.items()
        }
        fb = {phase: {k: v["fallbacks"] for k, v in d.items()} for phase, d in self.tokens.items()}
        return {
            "tokens_by_call_type": by_type,
            "tokens_by_phase": self.tokens,
            "test_tokens_per_step": per_step,
            # chat tokens of the test calls made at each session step (1-based; a reflection on
            # the previous decision and the day's decision), for per-cycle figures
            "test_tokens_by_step": [
                int(self.test_step_tokens[k]) for k in range(1, max(self.test_step_tokens, default=0) + 1)
            ],
            "fallbacks": {
                # replies not used (a re-asked reply counts, and so does its re-ask if it fails too)
                "total": sum(v["fallbacks"] for v in by_type.values()),
                "reasks": sum(v["reasks"] for v in by_type.values()),
                # replies cut at max_tokens (a thinking model's reasoning overrunning the budget)
                "cut_at_max_tokens": sum(v["cut"] for v in by_type.values()),
                "by_phase": fb,
                "test_steps": sum(self.fallback_steps),
                "reasons": dict(self.fallback_reasons),
            },
            "memory_sizes": self.memory_final,
            "memory_sizes_max": self.memory_max,
            "memory_moves": self.moves,
            "characters": {k: dict(v) for k, v in self.characters.items()},
            "decisions_citing_memory": self.cited_decisions,
            "decisions_called": self.decisions,
            "news_budget_cuts": {
                DECISION_CALL: {"prompts": self.news_cuts, "items_omitted": self.news_omitted}
            }
            if self.news_cuts
            else {},
        }


def _sign(x: float) -> int:
    return 1 if x > 0 else -1 if x < 0 else 0


def _pct(x: float) -> float:
    return round(100.0 * x, 3)


def _day(s: Any, g: int) -> Any:
    return s.dates[g].item()


def _memory_days(s: Any, recalled: Any) -> tuple[list[Any], list[Any]]:
    """(price, news) sessions of the recalled items: the session each was stored at (a news
    item is stored at the session it is dated in or before, so its session bounds its date)."""
    items = [r for layer in LAYERS for r in recalled[layer]]
    news = [_day(s, r.step) for r in items if r.kind == "news"]
    return [_day(s, r.step) for r in items if r.kind != "news"], news


def run_agent(
    market: Any,
    config: Any,
    *,
    exposure: str,
    seed: int,
    embedder: TextEmbedder,
    run_id: str = "",
    aliases: Any = None,
    budget: PromptBudget | None = None,
) -> Gen:
    """The loop of one run over ``market`` (a prepared :class:`FinMemMarket` with a pair);
    ``budget``: the served context every request is checked against (None: unchecked)."""
    from agent.pairs.baselines.common import tradable

    cfg, s = config, market.series
    a, b = s.ticker_a, s.ticker_b
    obs = observations(
        s,
        market.train_idx + market.test_idx,
        hedge_window=cfg.hedge_window,
        z_window=cfg.z_window,
        min_sessions=cfg.hedge_min_sessions,
        rel_move_sessions=cfg.rel_move_sessions,
        momentum_sessions=cfg.momentum_sessions,
    )
    mem = LayeredMemory(cfg.memory, embedder, seed)
    st = AgentState(provenance=ProvenanceLog(run_id, aliases.request if aliases is not None else None))
    calls = CallSettings(
        cfg.model,
        cfg.sampling(seed),
        cfg.max_tokens_decision or 0,
        cfg.max_tokens_reflection or 0,
        cfg.reason_max_chars,
        cfg.reflection_max_chars,
        cfg.cite_max,
        cfg.prompt_dir,
        cfg.decoding or "schema",
    )
    company = company_lines((a, b), market.companies, market.calendar, cfg.description_max_chars)
    label = market.label
    execution = market.settings.execution_settings()
    legs = (a, b)
    prev_g: int | None = None
    held = FLAT

    def masked(text: str) -> str:
        return " ".join(mask_text(text, market.calendar).split())

    def ask(
        req: ChatRequest, shown: dict[str, list[int]], parse: Any, record: Any, k: int
    ) -> Generator[list[ChatRequest], list[ChatResult], tuple[ChatResult, Parsed]]:
        """Send ``req`` (checked against the context first), then re-ask an unusable reply up
        to ``reasks`` times; every result is counted and every request recorded."""
        where = f"{phase} step {k + 1:03d}"
        if budget is not None:
            budget.check(req, where)
        record(req)
        (res,) = yield [req]
        parsed = parse(res, shown)
        st.count(res, phase, parsed.fallback is not None, k + 1)
        for _ in range(cfg.reasks):
            if parsed.fallback is None or parsed.fallback.startswith("backend error"):
                break
            again = reask_request(calls, req, res, parsed.fallback)
            if budget is not None:
                budget.check(again, where)
            record(again)
            (res,) = yield [again]
            parsed = parse(res, shown)
            st.count(res, phase, parsed.fallback is not None, k + 1, reask=True)
        return res, parsed

    def recorder(k: int, g: int, prices: list[Any], news: list[Any], screen: Any = None) -> Any:
        def record(req: ChatRequest) -> None:
            st.provenance.record(
                req,
                phase=phase,
                round=0,
                step=k + 1,
                decision_date=_day(s, g),
                prices=prices,
                news=news,
                screen_end=screen,
            )

        return record

    for phase, idx, expo in (
        ("train", market.train_idx, cfg.train_exposure),
        ("test", market.test_idx, exposure),
    ):
        ok = tradable(s, expo, market.betas)
        book = Book(execution, s.quote)
        pending: _Decision | None = None
        held = FLAT
        chars = st.characters.setdefault(phase, Counter())
        for k, g in enumerate(idx):
            # 1. settle the decision of the previous session
            settled = None
            if pending is not None:
                beta = float(market.betas[pending.index]) if expo == "beta" else _NAN
                p0 = pending.index
                w = (
                    no_beta_weights(market.settings.no_beta_legs, s.price_a[p0], s.price_b[p0])
                    if expo == "no_beta"
                    else leg_weights("beta", beta)
                    if beta == beta
                    else None
                )
                if g != p0 + 1:
                    raise ConfigError(f"FinMem settles session {p0} at {g}: sessions must be consecutive")
                settled = book.settle(p0, legs, pending.action if w is not None else FLAT, w)
                st.settled_returns.append(settled.realized)
                mem.feedback(pending.cited, _sign(settled.realized))
                held = pending.action if w is not None else FLAT
            # 2. time passes
            if prev_g is not None:
                mem.advance(g - prev_g)
            prev_g = g
            # 3. today's items
            _ingest(mem, market, cfg, g)
            # 4. the settled decision goes to the reflection layer
            if pending is not None and settled is not None and pending.called:
                head = (
                    f"{label(pending.index)}: held {pending.action}; next session LONG_SHORT "
                    f"{settled.returns[LONG_SHORT] * 100:+.2f}%, best {settled.best}"
                )
                lesson = ""
                reflect = cfg.train_reflection if phase == "train" else cfg.test_reflection
                if reflect:
                    payload = {
                        "current_step": label(g),
                        "decision_step": label(pending.index),
                        "pair": {"A": a, "B": b},
                        "action": pending.action,
                        "pnl_pct": {x: _pct(settled.returns[x]) for x in ACTIONS},
                        "best_action": settled.best,
                        "observation_then": obs[pending.index].to_payload(),
                        "memory_then": pending.memory,
                    }
                    req = reflection_request(calls, payload, pending.shown)
                    then_prices, then_news = pending.sources
                    record = recorder(k, g, [_day(s, g), _day(s, pending.index), *then_prices], then_news)
                    _res, parsed = yield from ask(req, pending.shown, parse_reflection, record, k)
                    if parsed.fallback:
                        st.fallback_reasons[f"reflection: {parsed.fallback.split(':')[0]}"] += 1
                    else:
                        lesson = masked(parsed.value["reflection"])
                        mem.feedback(parsed.value["cited"], +1)
                elif pending.reason:
                    lesson = masked(pending.reason)
                text = f"{head}. {'Lesson' if reflect else 'Reason then'}: {lesson}" if lesson else head
                mem.add("reflection", [("reflection" if reflect and lesson else "outcome", text)], g)
            pending = None
            sizes = mem.sizes()
            for layer, n in sizes.items():
                st.memory_max[layer] = max(st.memory_max[layer], n)
            if k == len(idx) - 1:
                continue
            # 5. decide
            character = risk_character(cfg.character, st.settled_returns)
            chars[character] += 1
            dec = _Decision(g, FLAT)
            note, fallback, key = "", "", ""
            if not ok[g]:
                note = "not tradable"
            else:
                o = obs[g]
                recalled = _news_budget(mem.retrieve(query_text(a, b, o, character)), cfg, st)
                dec.shown = {layer: [r.uid for r in recalled[layer]] for layer in LAYERS}
                dec.memory = memory_payload(recalled, label)
                payload = {
                    "current_step": label(g),
                    "pair": {"A": a, "B": b},
                    "today": o.to_payload(),
                    "held": held,
                    "recent_returns_pct": [_pct(r) for r in st.settled_returns[-cfg.character.lookback :]],
                    "memory": dec.memory,
                }
                req = decision_request(
                    calls,
                    payload,
                    character=character,
                    adaptive=cfg.character.mode == "self_adaptive",
                    company=company,
                    shown=dec.shown,
                )
                # today's observation and the settled returns (both at g), the recalled items
                mem_prices, mem_news = _memory_days(s, recalled)
                dec.sources = (mem_prices, mem_news)
                # the test pair is the screen's top candidate at step 001
                screen = market.selection.screen_end if phase == "test" and k == 0 else None
                record = recorder(k, g, [_day(s, g), *mem_prices], mem_news, screen)
                res, parsed = yield from ask(req, dec.shown, parse_decision, record, k)
                key = res.request_key
                st.decisions += 1
                dec.called = True
                dec.action, dec.reason, dec.cited = (
                    parsed.value["action"],
                    parsed.value["reason"],
                    parsed.value["cited"],
                )
                st.cited_decisions += int(bool(dec.cited))
                if parsed.fallback:
                    fallback = parsed.fallback
                    st.fallback_reasons[f"decision: {fallback.split(':')[0]}"] += 1
                    note = f"fallback FLAT ({fallback[:80]})"
            pending = dec
            if phase == "test":
                st.actions.append(dec.action)
                st.notes.append(note)
                st.fallback_steps.append(bool(fallback))
                st.test_keys.append(key)
            st.trace.append(
                {
                    "phase": phase,
                    "index": g,
                    "date": str(s.dates[g]),
                    "step": label(g),
                    "character": character,
                    "sizes": sizes,
                    "recalled": [i for layer in LAYERS for i in dec.shown.get(layer, ())],
                    "recalled_by_layer": dec.shown,
                    "cited": dec.cited,
                    "action": dec.action,
                    "fallback": fallback,
                    "promotions": mem.promotions,
                    "forgotten": mem.forgotten,
                }
            )
    st.memory_final = mem.sizes()
    st.moves = {"promotions": mem.promotions, "demotions": mem.demotions, "forgotten": mem.forgotten}
    return st


def _news_budget(recalled: dict[str, list[Any]], cfg: Any, st: AgentState) -> dict[str, list[Any]]:
    """The recalled items with their news kept newest first while the texts fit the prompt's
    ``news_token_budget`` (0: all); the items left out are counted (``news_budget_cuts``)."""
    if not cfg.news_token_budget:
        return recalled
    news = sorted(
        (r for layer in LAYERS for r in recalled.get(layer, ()) if r.kind == "news"),
        key=lambda r: (-r.step, r.uid),
    )
    fit = fit_newest_first([r.text for r in news], cfg.news_token_budget)
    if not fit.cut:
        return recalled
    st.news_cuts += 1
    st.news_omitted += fit.omitted
    dropped = {r.uid for r in news[fit.shown :]}
    return {layer: [r for r in items if r.uid not in dropped] for layer, items in recalled.items()}


def _ingest(mem: LayeredMemory, market: Any, cfg: Any, g: int) -> None:
    """Store session ``g``'s items (see the module docstring, step 3): the day's news of both
    legs in short; each filing the market assigns to ``g`` (filed since the previous session) in
    the layer of its form, 10-Q mid and 10-K long."""
    s = market.series
    short: list[tuple[str, str]] = []
    if cfg.news_per_leg:
        for leg in (s.ticker_a, s.ticker_b):
            items = [n for n in market.news.get(g, ()) if n.ticker == leg][::-1][: cfg.news_per_leg]
            width = 0 if cfg.news_token_budget else cfg.news_max_chars  # whole items under a budget
            short += [("news", news_text(n, market.calendar, width)) for n in items[::-1]]
    mem.add("short", short, g)
    for form, layer in FILING_LAYER.items():
        entries = []
        for f in market.filings.get(g, ()):
            if f.document_type == form:
                text = filing_text(f, market.calendar, cfg.filing_section, cfg.filing_max_chars)
                if text:
                    entries.append((form, text))
        mem.add(layer, entries, g)
