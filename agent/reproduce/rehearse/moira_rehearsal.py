"""The Moira rehearsal on a config's own data path (``localfin reproduce rehearse`` of a Moira
config): the path a GPU run takes, shrunk in windows and replies only.

1. **Data, as a user imports it.** The Herculean (TheFinAI) layout: ``prices.parquet`` (``id,
   symbol, date, open, high, low, close, adj_close, volume``), ``news.parquet`` (``id, symbol,
   date, highlights``: one model-written summary per ticker and calendar day) and
   ``filings.parquet`` (``id, symbol, date, document_type, mda_content, risk_content``), plus the
   longer daily price history the ten-year screen needs and a companies file. The user's files
   are read from ``$LOCALFIN_DATA_DIR``: ``herculean/`` (or ``herculean/data/``), ``history/*.csv``
   and ``companies.csv``. Where the Herculean folder is absent, a stand-in is written in that
   layout for the config's pool (:func:`write_stand_in`: a seeded synthetic market on the NYSE
   calendar, cointegrated pairs among the pool's tickers, one planted break in the first test
   window, daily highlights written from the day's items, a keyword event for every pool ticker
   on the second session of each shrunk window so the news-verification path runs whatever pair
   is held). Either way the files go through :func:`agent.data.importer.import_files` into the
   rehearsal's own store (``OUT/<config>/data/market.sqlite``, made once for both paths).
2. **The config's run, shrunk.** Its matrix document (backbones, ``[model]``, ``[prompt]``,
   screen, variants, exposures, lifecycle rules, every baseline it runs) on that store, its pool
   as shipped, each windows set cut to its first ``train_sessions`` training and
   ``test_sessions`` test sessions, the first seed, one replay cycle, a ``validation_period``
   short enough for a boundary in the test window, EG-DDQN trained briefly, and the reply fields
   bounded (:data:`REPLY_BOUNDS`: the random stand-ins would otherwise fill an unbounded reason
   up to the 16,384-token budget). A config that reads replies as the paper does
   (``[model] decoding = "prompt"``) sends no schema to constrain a reply, and nothing but its
   budget stops a random model's free text, nor does it ever write a parseable reply: its
   rehearsal gives every agent call :data:`FREE_REPLY_TOKENS` tokens and takes the screen's top
   candidate when a selection reply does not parse (``[selection] fallback = "top_candidate"``),
   so that every stage is reached with the replies recorded as fallbacks. Then the matrix
   summary and ``reproduction.md``.
3. **Stages.** :func:`stage_checks` reads back what ran: the files imported (rows per kind),
   screens with candidates, every model call type of the agent and of FinMem, news in the
   selection, direction, break-check and verification prompts, every baseline and variant run,
   A4's shared start, A3's shared warmup (its round and reflection once, the same first test
   request in both conditions), the matrix summary and ``reproduction.md``. A stage that did not run is a
   failed check, so the rehearsal exits 1.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.reproduce.rehearse.checks import Check
from agent.reproduce.spec import ReproConfig
from localfin import env
from localfin.errors import ConfigError

__all__ = [
    "FREE_REPLY_TOKENS",
    "REPLY_BOUNDS",
    "DataFiles",
    "user_files",
    "write_stand_in",
    "prepare_store",
    "rehearsal_windows",
    "moira_document",
    "run_moira_rehearsal",
    "stage_checks",
]

log = logging.getLogger(__name__)

#: Completion budget of every agent call of a rehearsal under ``decoding = "prompt"`` (tokens;
#: FinMem's calls follow the direction and reflection budgets, as in a run).
FREE_REPLY_TOKENS = 256
#: Reply bounds of the rehearsal (characters; the reproduction configs state none, 0).
REPLY_BOUNDS = {"reason_max_chars": 120, "principle_max_chars": 160, "reflection_max_chars": 400}
FINMEM_REPLY_BOUNDS = {"reason_max_chars": 120, "reflection_max_chars": 200}
#: FinMem's filing excerpts in a rehearsal (characters; the configs keep them whole, 0): the
#: stand-ins would prefill six whole reports on the CPU
FINMEM_FILING_CHARS = 1500
#: EG-DDQN trains on the CPU in seconds (the path, not the paper's figure)
_DDQN = {"episodes": 2, "min_replay": 32, "history_sessions": 120}
#: a keyword event written into every pool ticker's highlights on the second session of each window
_EVENT = (
    "{t} said it will restate previously issued financial statements after an accounting review "
    "flagged a material weakness."
)
_AGENT_CALLS = ("pair_selection", "direction", "reflection", "break_check", "news_verify")
_FINMEM_CALLS = ("finmem_decision", "finmem_reflection")


@dataclass(frozen=True)
class DataFiles:
    """The files a rehearsal imported: the Herculean folder, the longer price history, the
    companies file, whether they are the stand-in, and the rows written per kind."""

    herculean: Path
    history: tuple[Path, ...]
    companies: tuple[Path, ...]
    stand_in: bool
    rows: Mapping[str, int] = field(default_factory=dict)
    store: Path = Path()

    def describe(self) -> list[str]:
        """The files, one line each (the report's "data" notes)."""
        from agent.data.herculean import herculean_files

        kind = "stand-in written in the Herculean layout" if self.stand_in else "the user's files"
        out = [f"data ({kind}), imported into {self.store}:"]
        out += [f"herculean {k}: {p}" for k, p in sorted(herculean_files(self.herculean).items())]
        out += [f"price history: {p}" for p in self.history]
        out += [f"companies: {p}" for p in self.companies]
        out.append("rows written: " + ", ".join(f"{k} {v}" for k, v in sorted(self.rows.items())))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "herculean": str(self.herculean),
            "history": [str(p) for p in self.history],
            "companies": [str(p) for p in self.companies],
            "stand_in": self.stand_in,
            "rows": dict(self.rows),
            "store": str(self.store),
        }


def user_files(root: Path) -> tuple[Path, tuple[Path, ...], tuple[Path, ...]] | None:
    """The user's Herculean folder, history CSVs and companies file under ``root`` (module
    docstring), or None when there is no Herculean folder with a ``prices.parquet``."""
    from agent.data.errors import FileFormatError
    from agent.data.herculean import herculean_files

    folder = root / "herculean"
    try:
        herculean_files(folder)
    except FileFormatError:
        return None
    history = tuple(sorted((root / "history").glob("*.csv")))
    companies = (root / "companies.csv",) if (root / "companies.csv").is_file() else ()
    return folder, history, companies


def rehearsal_windows(
    cfg: ReproConfig, sessions: Sequence[dt.date], train: int, test: int
) -> list[dict[str, str]]:
    """Each windows set of ``cfg`` cut to its first ``train`` training and ``test`` test
    sessions of ``sessions`` (the store's calendar); an error names a set the data cannot cover."""
    out = []
    for w in cfg.windows:
        tr = [d for d in sessions if w.train_start <= d <= w.train_end][:train]
        te = [d for d in sessions if w.test_start <= d <= w.test_end][:test]
        if len(tr) < 2 or len(te) < 2:
            raise ConfigError(
                f"windows set {w.name!r}: the data holds {len(tr)} training and {len(te)} test "
                f"session(s) of {w.train_start}..{w.test_end}; the rehearsal needs at least 2 each"
            )
        out.append(
            {
                "name": w.name,
                "train_start": tr[0].isoformat(),
                "train_end": tr[-1].isoformat(),
                "test_start": te[0].isoformat(),
                "test_end": te[-1].isoformat(),
            }
        )
    return out


def _stand_in_market(pool: Sequence[str], days: Sequence[dt.date], break_at: int) -> Any:
    """A seeded synthetic market of ``pool`` on ``days``: cointegrated pairs of neighbouring
    tickers, a planted restatement on the first pair's y leg at session ``break_at``."""
    import numpy as np

    from agent.data.synthetic import BreakSpec, PairSpec, SyntheticConfig, TickerSpec, generate_market

    names = sorted(pool)
    rng = np.random.default_rng(11)
    tickers = tuple(
        TickerSpec(t, f"{t} Stand-in Corporation", "Information Technology", float(rng.uniform(20, 400)))
        for t in names
    )
    pairs = tuple(
        PairSpec(names[k + 1], names[k], half_life=6.0 + 5.0 * k, beta=1.0)
        for k in range(0, len(names) - 1, 2)
    )
    breaks = (BreakSpec(pairs[0].y, break_at, "restatement", -0.25),) if pairs else ()
    cfg = SyntheticConfig(
        seed=11, n_sessions=len(days), tickers=tickers, pairs=pairs, breaks=breaks, n_decoys=0
    )
    market = generate_market(cfg)
    # the generator's weekday calendar, position for position, on the NYSE sessions
    mapping = {str(a): b.isoformat() for a, b in zip(market.dates, days)}
    prices = market.prices.assign(date=market.prices["date"].map(mapping))
    news = market.news.assign(date=market.news["date"].map(mapping))
    return prices, news, market.companies


def write_stand_in(
    cfg: ReproConfig, out: Path, *, history_sessions: int, windows: Sequence[Mapping[str, str]] | None = None
) -> tuple[Path, tuple[Path, ...], tuple[Path, ...]]:
    """Write the stand-in data of ``cfg`` under ``out`` (module docstring): ``herculean/data/``
    (prices, highlights, and 10-K / 10-Q filings from a year before the first training session on),
    ``history/prices.csv``
    (``history_sessions`` sessions before it) and ``companies.csv``. ``windows``: the shrunk
    windows (the keyword events go on their second sessions; None: computed here)."""
    import pandas as pd

    from agent.reproduce import nyse

    if len(cfg.pool) < 2:
        raise ConfigError(
            f"config {cfg.name}: the rehearsal's stand-in needs the config's pool, got {cfg.pool}"
        )
    first = min(w.train_start for w in cfg.windows)
    last = max(w.test_end for w in cfg.windows)
    span = nyse.sessions(first, last)
    before = nyse.sessions(
        first - dt.timedelta(days=int(history_sessions * 1.5) + 30), first - dt.timedelta(days=1)
    )
    days = before[-history_sessions:] + span
    if windows is None:
        windows = rehearsal_windows(cfg, span, 10**6, 10**6)
    test0 = dt.date.fromisoformat(windows[0]["test_start"])
    prices, news, companies = _stand_in_market(cfg.pool, days, days.index(test0))
    base = out / "herculean" / "data"
    base.mkdir(parents=True, exist_ok=True)
    (out / "history").mkdir(parents=True, exist_ok=True)
    cut = first.isoformat()
    recent = prices[prices["date"] >= cut].reset_index(drop=True)
    recent = recent.rename(columns={"ticker": "symbol"})
    cols = ["symbol", "date", "open", "high", "low", "close", "adj_close", "volume"]
    recent = recent[cols]
    recent.insert(0, "id", range(1, len(recent) + 1))
    recent.assign(date=pd.to_datetime(recent["date"])).to_parquet(base / "prices.parquet", index=False)
    prices[prices["date"] < cut].to_csv(out / "history" / "prices.csv", index=False)
    # one model-written summary per ticker and day, as Herculean's news.parquet holds
    news = news[news["date"] >= cut]
    # on the second session of each window: the first session the monitor checks a held pair
    second = {d.isoformat(): days[days.index(d) + 1].isoformat() for d in days[:-1]}
    events = {(second[w[k]], t) for w in windows for k in ("train_start", "test_start") for t in cfg.pool}
    texts: dict[tuple[str, str], list[str]] = {}
    for r in news.itertuples():
        texts.setdefault((r.date, r.ticker), []).append(f"{r.headline.rstrip('.')}. {r.summary}")
    for day, t in events:
        texts.setdefault((day, t), []).append(_EVENT.format(t=t))
    rows = [
        {"date": day, "symbol": t, "highlights": f"{t} daily highlights: " + " ".join(parts)}
        for (day, t), parts in sorted(texts.items())
    ]
    hl = pd.DataFrame(rows)[["symbol", "date", "highlights"]]
    hl.insert(0, "id", range(1, len(hl) + 1))
    hl.assign(date=pd.to_datetime(hl["date"])).to_parquet(base / "news.parquet", index=False)
    # each ticker's 10-K and 10-Q text of realistic length (seeded, generated), filed over the
    # year before the first session and through the windows, so FinMem's mid and long fill
    from agent.data.filings_text import FilingCompany, herculean_frame, synthetic_filings

    names = dict(zip(companies["ticker"], companies["name"]))
    fil = synthetic_filings(
        [FilingCompany(t, names.get(t, t), "Information Technology") for t in sorted(cfg.pool)],
        first - dt.timedelta(days=400),
        last,
        seed=11,
    )
    herculean_frame(fil).to_parquet(base / "filings.parquet", index=False)
    comp = companies.rename(columns={"description": "business_description"})
    comp.to_csv(out / "companies.csv", index=False)
    return out / "herculean", (out / "history" / "prices.csv",), (out / "companies.csv",)


def prepare_store(
    cfg: ReproConfig, out: Path, *, train: int, test: int, data_root: Path | None = None
) -> DataFiles:
    """The rehearsal's market store of ``cfg`` in ``out`` (``out/market.sqlite``), made once:
    the user's files under ``data_root`` (default ``$LOCALFIN_DATA_DIR``) or the stand-in,
    through the importer; an existing store of an earlier path is reused."""
    from agent.data.importer import import_files
    from agent.data.store import MarketStore
    from agent.data.validate import ImportConfig

    out.mkdir(parents=True, exist_ok=True)
    done = out / "data.json"
    if done.is_file():
        doc = json.loads(done.read_text(encoding="utf-8"))
        return DataFiles(
            Path(doc["herculean"]),
            tuple(Path(p) for p in doc["history"]),
            tuple(Path(p) for p in doc["companies"]),
            doc["stand_in"],
            doc["rows"],
            Path(doc["store"]),
        )
    found = user_files(data_root if data_root is not None else env.data_dir())
    stand_in = found is None
    if found is None:
        lookback = int(cfg.document.get("screen", {}).get("lookback", 2520))
        found = write_stand_in(cfg, out / "stand_in", history_sessions=lookback + 20)
    herculean, history, companies = found
    store = out / "market.sqlite"
    tmp = out / "market.sqlite.tmp"
    tmp.unlink(missing_ok=True)
    icfg = ImportConfig(pool=tuple(cfg.pool))
    with MarketStore(tmp) as s:
        rep = import_files(
            s, prices=list(history), herculean=herculean, companies=list(companies), config=icfg
        )
    tmp.replace(store)
    files = DataFiles(herculean, history, companies, stand_in, dict(rep.written), store)
    done.write_text(json.dumps(files.to_dict(), indent=1), encoding="utf-8")
    return files


def moira_document(
    cfg: ReproConfig, store: Path, windows: Sequence[Mapping[str, str]], size: Any
) -> dict[str, Any]:
    """The config's matrix document on the rehearsal ``store`` with ``windows`` (module
    docstring): everything as shipped but the amounts and the reply bounds."""
    src = copy.deepcopy(dict(cfg.document))
    doc = dict(src)
    doc["matrix"] = {**dict(src["matrix"]), "seeds": [next(iter(src["matrix"].get("seeds", [0])))]}
    doc["windows"] = [dict(w) for w in windows]
    exp = dict(src.get("experiment", {}))
    exp["store"] = str(store)
    doc["experiment"] = exp
    doc["model"] = {**dict(src.get("model", {})), "backend": "vllm"}
    if doc["model"].get("decoding") == "prompt":
        doc["model"]["max_tokens"] = dict.fromkeys(_AGENT_CALLS, FREE_REPLY_TOKENS)
        doc["selection"] = {**dict(src.get("selection", {})), "fallback": "top_candidate"}
    prompt = dict(src.get("prompt", {}))
    for k, v in REPLY_BOUNDS.items():
        if not prompt.get(k, 1):
            prompt[k] = v
    doc["prompt"] = prompt
    doc["policy"] = {**dict(src.get("policy", {})), "max_cycles": 1}
    doc["lifecycle"] = {**dict(src.get("lifecycle", {})), "validation_period": size.validation_period}
    base = dict(src.get("baselines") or {})
    fm = dict(base.get("finmem") or {})
    for k, v in FINMEM_REPLY_BOUNDS.items():
        if fm.get(k, 1) == 0:
            fm[k] = v
    if fm.get("filing_max_chars", 1) == 0:
        fm["filing_max_chars"] = FINMEM_FILING_CHARS
    # a shrunk window rarely holds a filing date: each leg's latest reports enter at its start
    fm["prior_filings"] = "latest"
    if fm:
        base["finmem"] = fm
    base["eg_ddqn"] = {**dict(base.get("eg_ddqn") or {}), **_DDQN}
    doc["baselines"] = base
    from agent.reproduce.moira.run import with_baselines

    return with_baselines(doc, cfg.baselines)[0]


def run_moira_rehearsal(
    cfg: ReproConfig, out: Path, backend: Any, registry: Any, *, size: Any, data_root: Path | None = None
) -> dict[str, Any]:
    """Run ``cfg`` on its own data path, shrunk (module docstring), into ``out``; returns the
    document, the data files, the stage checks and notes (``checks``, ``notes``)."""
    from agent.data.store import MarketStore
    from agent.reproduce.moira.run import FALLBACK_TABLE, moira_fallback_rows, moira_rows, run_moira
    from agent.reproduce.moira.token_tables import token_tables
    from agent.reproduce.report import write_report

    data = prepare_store(
        cfg, out.parent / "data", train=size.train_sessions, test=size.test_sessions, data_root=data_root
    )
    with MarketStore(data.store, create=False) as s:
        sessions = [d.item() for d in s.calendar(None, None, tuple(cfg.pool))]
    windows = rehearsal_windows(cfg, sessions, size.train_sessions, size.test_sessions)
    doc = moira_document(cfg, data.store, windows, size)
    outcome = run_moira(cfg, out, document=doc, backend=backend, registry=registry)
    rows = moira_rows(outcome)
    notes = [
        "REHEARSAL: the config at its GPU settings on tiny random stand-ins of its backbones, on its own "
        "data path (Herculean layout through the importer), windows shrunk "
        f"({size.train_sessions} training / {size.test_sessions} test sessions per windows set, the first "
        f"seed, one replay cycle, validation every {size.validation_period} sessions), reply fields bounded "
        f"for the random stand-ins ({', '.join(f'{k} {v}' for k, v in REPLY_BOUNDS.items())}), "
        f"FinMem's filing excerpts cut to {FINMEM_FILING_CHARS} characters with each leg's latest 10-Q "
        "and 10-K entering at the first session (the shrunk windows rarely hold a filing date); its "
        "figures say nothing about the paper's.",
        *(
            [
                f"decoding prompt (the paper's): every agent call given {FREE_REPLY_TOKENS} tokens and an "
                "unparsed selection reply taking the screen's top candidate, since a random stand-in "
                "writes free text that neither ends nor parses; its replies are recorded fallbacks"
            ]
            if doc["model"].get("decoding") == "prompt"
            else []
        ),
        *data.describe(),
        *outcome.notes,
    ]
    write_report(
        cfg,
        out,
        rows,
        mode="rehearsal",
        notes=notes,
        extra={"data": data.to_dict()},
        tables=[(FALLBACK_TABLE, moira_fallback_rows(outcome)), *token_tables(outcome.cells)],
    )
    path = out.name
    checks = stage_checks(cfg, out, doc, data, path)
    return {"document": doc, "data": data, "checks": checks, "notes": data.describe()}


def _records(out: Path) -> list[dict[str, Any]]:
    from agent.reproduce.rehearse.checks import journal_records

    return journal_records(out)


def _payload(req: Mapping[str, Any]) -> dict[str, Any]:
    try:
        value = json.loads(req["messages"][-1]["content"])
    except (ValueError, KeyError, IndexError):
        return {}
    return value if isinstance(value, dict) else {}


def _same_training(cell: Path, runs: Sequence[str]) -> tuple[bool, int]:
    """Whether the training rows of ``runs``' traces are the same requests (one training phase,
    its warmup included), and how many model calls they hold."""
    import pandas as pd

    keys = []
    for r in runs:
        t = pd.read_parquet(cell / "runs" / r / "trace.parquet")
        keys.append(list(t[(t.phase == "train") & (t.request_key != "")].request_key))
    return bool(keys) and all(k == keys[0] for k in keys), len(keys[0]) if keys else 0


def _a3_shared_warmup(cell: Path, config: Any, want: Sequence[str], written: set[str]) -> tuple[bool, str]:
    """Whether A3's conditions shared one warmup (paper §4.3.3): every run's metrics name one run
    of each variant as sharing its warmup; for the first seed and exposure, the warmup rows (its
    round and its reflection) of the full and the control run's traces are the same requests, and
    their first test requests are the same. Returns (ok, what was seen)."""
    import pandas as pd

    if any(r not in written for r in want):
        return False, "runs missing"
    docs = {r: json.loads((cell / "runs" / r / "metrics.json").read_text(encoding="utf-8")) for r in want}
    names = {v.name for v in config.variants}
    shared = all(
        {x.rsplit("-", 2)[0] for x in d["extra"].get("warmup_shared_with", [])} == names
        for d in docs.values()
    )
    full = next(v.name for v in config.variants if v.policy.consolidation)
    ctrl = next(v.name for v in config.variants if not v.policy.consolidation)
    e, s0 = config.exposures[0], config.seeds[0]
    ids = (f"{full}-{e}-s{s0}", f"{ctrl}-{e}-s{s0}")

    def rows(run: str) -> tuple[list[str], list[str], str]:
        t = pd.read_parquet(cell / "runs" / run / "trace.parquet")
        train = t[t.phase == "train"]
        warm = train[(train["round"] == 0) & (train.request_key != "")]
        refl = train[(train["round"] == 1) & (train.kind == "reflection")]
        test = t[(t.phase == "test") & (t.request_key != "")]
        first = f"{test.iloc[0].kind} {test.iloc[0].request_key}" if len(test) else ""
        return list(warm.request_key), list(refl.request_key), first

    (w_full, r_full, f_full), (w_ctrl, r_ctrl, f_ctrl) = rows(ids[0]), rows(ids[1])
    same_warm = w_full == w_ctrl and r_full == r_ctrl and len(r_full) == 1
    same_first = bool(f_full) and f_full == f_ctrl
    memory = docs[ids[0]]["extra"].get("warmup_principles", [])
    kept = [len(docs[r]["extra"].get("principles", [])) for r in ids]
    detail = (
        f"{ids[0]} and {ids[1]} share one warmup: {len(w_full)} warmup-round calls and "
        f"{len(r_full)} warmup reflection, the same requests in both traces: {same_warm}; warmup "
        f"reflection memory {len(memory)} principle(s): the control keeps {kept[1]}, the full "
        f"condition ends with {kept[0]} (never below it); first test request identical in both "
        f"conditions: {same_first} ({f_full[:28]}); every run names one run of each condition as "
        f"sharing its warmup: {shared}"
    )
    return shared and same_warm and same_first, detail


def stage_checks(
    cfg: ReproConfig, out: Path, doc: Mapping[str, Any], data: DataFiles, path: str
) -> list[Check]:
    """Every stage of the run as a check (module docstring); ``ok`` False where it did not run."""
    from agent.pairs.experiment.matrix_config import parse_matrix

    checks: list[Check] = []

    def stage(name: str, ok: bool, detail: str, **seen: Any) -> None:
        checks.append(Check(path, "stage", name, ok, detail, seen))

    rows = dict(data.rows)
    stage(
        "import (Herculean layout)",
        all(rows.get(k, 0) > 0 for k in ("prices", "news", "filings")),
        ("stand-in" if data.stand_in else "user's files")
        + ": "
        + ", ".join(f"{k} {v}" for k, v in sorted(rows.items())),
        files=data.to_dict(),
    )
    recs = _records(out)
    by: dict[str, list[Mapping[str, Any]]] = {}
    for r in recs:
        by.setdefault(r["request"]["call_type"], []).append(r["request"])
    cells = parse_matrix(doc, base_dir=Path(".")).cells()
    methods = sorted({m for c in cells for m in c.config.baselines.methods})
    wanted = list(_AGENT_CALLS) + (list(_FINMEM_CALLS) if "finmem" in methods else [])
    for call in wanted:
        n = len(by.get(call, ()))
        stage(f"calls: {call}", n > 0, f"{n} call(s) journaled")
    sel = sum(
        bool(_payload(q).get("recent_news_by_ticker") and any(_payload(q)["recent_news_by_ticker"].values()))
        for q in by.get("pair_selection", ())
    )
    stage("news in pair selection", sel > 0, f"{sel} selection prompt(s) with news")
    dirs = sum(
        bool(
            _payload(q).get("active_candidate", {}).get("news_a")
            or _payload(q).get("active_candidate", {}).get("news_b")
        )
        for q in by.get("direction", ())
    )
    stage("news in direction", dirs > 0, f"{dirs} direction prompt(s) with news")
    brk = sum(
        _payload(q).get("past_week_news_summary", "no news") != "no news" for q in by.get("break_check", ())
    )
    stage("news in break check", brk > 0, f"{brk} break check(s) with past-week news")
    ver = sum(bool(_payload(q).get("candidate_event")) for q in by.get("news_verify", ()))
    stage("news in verification", ver > 0, f"{ver} verification(s) of a keyword candidate")
    if "finmem" in methods:
        fil = sum(
            any(" 10-Q (" in i.get("text", "") for i in _payload(q).get("memory", {}).get("mid", []))
            and any(" 10-K (" in i.get("text", "") for i in _payload(q).get("memory", {}).get("long", []))
            for q in by.get("finmem_decision", ())
        )
        stage(
            "filings in FinMem's memory",
            fil > 0,
            f"{fil} FinMem decision(s) with a 10-Q in mid and a 10-K in long",
        )
    mdir = out / "matrix"
    for c in cells:
        cell = mdir / c.folder
        runs = {p.name for p in (cell / "runs").glob("*") if (p / "metrics.json").is_file()}
        want_runs = [rid for rid, _v, _e, _s in c.config.run_ids()]
        missing = [r for r in want_runs if r not in runs]
        stage(
            f"runs: agent ({c.folder})",
            not missing,
            f"{len(want_runs) - len(missing)} of {len(want_runs)} runs written"
            + (f"; missing {missing}" if missing else ""),
        )
        for m in c.config.baselines.methods:
            got = sorted(r for r in runs if r.startswith(f"{m}-"))
            stage(f"baseline: {m} ({c.folder})", bool(got), f"{len(got)} run(s): {', '.join(got) or 'none'}")
        for name in ("summary.json", "summary.md", "manifest.json"):
            stage(f"experiment {name} ({c.folder})", (cell / name).is_file(), str(cell / name))
        a4 = [v.name for v in c.config.variants if not v.selection.reselection]
        if a4:
            docs = {
                r: json.loads((cell / "runs" / r / "metrics.json").read_text(encoding="utf-8"))
                for r in runs
                if r in want_runs
            }
            starts = {d["extra"]["initial_pair"] for d in docs.values()}
            shared = all(len(d["extra"].get("training_shared_with", [])) > 1 for d in docs.values())
            same, n = _same_training(cell, sorted(docs))
            stage(
                f"A4 one start ({c.folder})",
                len(starts) == 1 and shared and same,
                f"initial pairs {sorted(starts)}; training shared: {shared}; one warmup and training "
                f"phase: {n} training calls (warmup round, its reflection, replays), the same requests in "
                f"the traces of {', '.join(sorted(docs))}: {same}",
            )
        if any(not v.policy.consolidation for v in c.config.variants):
            ok, detail = _a3_shared_warmup(cell, c.config, want_runs, runs)
            stage(f"A3 shared warmup ({c.folder})", ok, detail)
    for name in ("summary.md", "summary.json", "manifest.json"):
        stage(f"matrix {name}", (mdir / name).is_file(), str(mdir / name))
    stage("reproduction.md", (out / "reproduction.md").is_file(), str(out / "reproduction.md"))
    return checks
