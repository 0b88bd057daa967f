"""`localfin bank ...`: build, add to, query, describe and analyse an experience bank."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from localfin_cli._common import progress_for, quiet_run, result

__all__ = ["app"]

app = typer.Typer(help="Experience bank: build, add, query, stats, analyze.", no_args_is_help=True)

_BANK = typer.Option(
    None,
    "--bank",
    help="Bank folder (bank.sqlite + index.hnsw; default: $LOCALFIN_BANK or $LOCALFIN_DATA_DIR/bank).",
)
_EMB = typer.Option("minilm", "--embedder", help="minilm (real, default) or hashing (tests only).")
_THREADS = typer.Option(1, "--threads", help="Torch threads for MiniLM.")


def _bank(path: Path | None) -> Path:
    from localfin import env

    return path if path is not None else env.default_bank_dir()


def _add(
    ctx: typer.Context, bank: Path | None, entries: Path, embedder: str, threads: int, batch: int, fresh: bool
) -> None:
    from bank.workflows import add_entries, make_embedder

    emb = make_embedder(embedder, threads)
    with quiet_run(ctx, "bank-build" if fresh else "bank-add") as rl:
        res = add_entries(_bank(bank), entries, emb, batch=batch, fresh=fresh, progress=progress_for(rl))
        result(rl, json.dumps({"bank": str(res.bank), "added": res.added, "rows": res.rows}))


@app.command("build")
def build(
    ctx: typer.Context,
    entries: Path = typer.Argument(
        ..., help="JSONL of entries (source_id, dataset, question, context, findings, cautions)."
    ),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    batch: int = typer.Option(256, help="Entries per committed batch."),
) -> None:
    """Create a new bank from a JSONL file of entries."""
    _add(ctx, bank, entries, embedder, threads, batch, fresh=True)


@app.command("add")
def add(
    ctx: typer.Context,
    entries: Path = typer.Argument(..., help="JSONL of entries to append."),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    batch: int = typer.Option(256, help="Entries per committed batch."),
) -> None:
    """Append entries to an existing (or new) bank."""
    _add(ctx, bank, entries, embedder, threads, batch, fresh=False)


@app.command("query")
def query(
    question: str = typer.Argument(...),
    context: str = typer.Option("", help="Question context."),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    tau: float = typer.Option(0.65, help="Cosine threshold."),
    k_max: int = typer.Option(5, help="Most entries returned; 0 = no cap."),
    block: bool = typer.Option(False, help="Print the rendered memory block instead of JSON."),
) -> None:
    """Retrieve entries for a question (JSON lines of hits, or the memory block)."""
    from bank.retrieval import format_memory_block
    from bank.schema import RetrievalConfig
    from bank.workflows import make_embedder, query_bank

    cfg = RetrievalConfig(tau=tau, k_max=k_max or None)
    res = query_bank(_bank(bank), question, context, make_embedder(embedder, threads), cfg)
    if block:
        typer.echo(format_memory_block(res.entries))
        return
    for h, e in zip(res.hits, res.entries):
        typer.echo(
            json.dumps(
                {
                    "id": h.entry_id,
                    "source_id": h.source_id,
                    "similarity": round(h.similarity, 6),
                    "question": e.question,
                    "findings": list(e.findings),
                    "cautions": list(e.cautions),
                }
            )
        )


@app.command("stats")
def stats(bank: Path = _BANK) -> None:
    """Row count, model, datasets, index state and the integrity check, as JSON."""
    from bank.workflows import bank_stats

    typer.echo(json.dumps(bank_stats(_bank(bank))))


def _taus(text: str) -> list[float]:
    try:
        return [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise typer.BadParameter(
            f"--taus {text!r}: expected comma-separated numbers, e.g. 0.5,0.65"
        ) from None


@app.command("analyze")
def analyze(
    ctx: typer.Context,
    queries: Path = typer.Argument(
        ..., help="JSONL with 'question' (optional 'context'; 'set' or 'dataset' for per-set rows)."
    ),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    out: Path = typer.Option(None, help="Output folder (default: $LOCALFIN_DATA_DIR/bank_analysis)."),
    steps: int = typer.Option(10, help="Snapshots: sizes n/steps, 2n/steps, ..., n."),
    taus: str = typer.Option("0.50,0.55,0.60,0.65,0.70,0.75,0.80,0.85,0.90", help="Comma list."),
    k_max: int = typer.Option(0, help="Cap per query; 0 = uncapped (as the paper's E_n)."),
    order: str = typer.Option("stratified", help="Snapshot order: stratified (paper) or insertion."),
    plots: bool = typer.Option(True, help="Write PNG plots."),
) -> None:
    """Snapshot metrics (H_n, E_n, Jaccard, change fraction) over a tau sweep -> CSV, JSON, PNG."""
    from bank.analytics import analyze_bank
    from bank.workflows import make_embedder
    from localfin import env

    out_dir = out if out is not None else env.data_dir() / "bank_analysis"
    tau_list = _taus(taus)
    emb = make_embedder(embedder, threads)
    with quiet_run(ctx, "bank-analyze") as rl:
        res = analyze_bank(
            _bank(bank),
            queries,
            emb,
            out_dir,
            steps=steps,
            taus=tau_list,
            k_max=k_max or None,
            order=order,
            plots=plots,
            progress=progress_for(rl),
        )
        result(
            rl,
            json.dumps(
                {
                    "out": str(res.out),
                    "files": list(res.files),
                    "queries": res.queries,
                    "sizes": list(res.sizes),
                    "embedder": res.embedder,
                    "dim": res.dim,
                    "order": order,
                    "sets": list(res.by_set),
                }
            ),
        )
