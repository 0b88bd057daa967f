"""`localfin bank ...`: build, add to, query, describe and analyse an experience bank."""

from __future__ import annotations

import json
from pathlib import Path

import typer

__all__ = ["app"]

app = typer.Typer(help="Experience bank: build, add, query, stats, analyze.", no_args_is_help=True)

_BANK = typer.Option(Path("localfin_data/bank"), "--bank", help="Bank folder (bank.sqlite + index.hnsw).")
_EMB = typer.Option("minilm", "--embedder", help="minilm (real, default) or hashing (tests only).")
_THREADS = typer.Option(1, "--threads", help="Torch threads for MiniLM.")


def _fail(exc: Exception) -> None:
    from rich.console import Console

    Console(stderr=True).print(f"[red]error:[/red] {exc}", markup=True, highlight=False)
    raise typer.Exit(code=2)


def _embedder(name: str, threads: int):  # -> Embedder
    from bank.embedder import HashingEmbedder, MiniLMEmbedder
    from bank.errors import BankConfigError

    if name == "minilm":
        return MiniLMEmbedder(threads=threads)
    if name == "hashing":
        return HashingEmbedder()
    raise BankConfigError(f"--embedder must be 'minilm' or 'hashing', got {name!r}")


def _read_entries(path: Path):  # -> list[NewEntry]
    from bank.errors import BankConfigError
    from bank.schema import EntryRecord

    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    out.append(EntryRecord.model_validate_json(line).to_new_entry())
                except ValueError as exc:
                    raise BankConfigError(f"{path}:{lineno}: not a valid entry: {exc}") from exc
    return out


def _add(bank_dir: Path, entries_path: Path, embedder: str, threads: int, batch: int, fresh: bool) -> None:
    from bank.errors import BankConfigError
    from bank.store import DB_NAME, ExperienceBank

    if fresh and (bank_dir / DB_NAME).exists():
        raise BankConfigError(f"{bank_dir} already holds a bank; use `localfin bank add` to extend it")
    entries = _read_entries(entries_path)
    emb = _embedder(embedder, threads)
    with ExperienceBank.open(bank_dir) as bank:
        for lo in range(0, len(entries), batch):
            bank.add_texts(entries[lo : lo + batch], emb, save_index=False)
        typer.echo(json.dumps({"bank": str(bank_dir), "added": len(entries), "rows": len(bank)}))


@app.command("build")
def build(
    entries: Path = typer.Argument(
        ..., help="JSONL of entries (source_id, dataset, question, context, findings, cautions)."
    ),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    batch: int = typer.Option(256, help="Entries per committed batch."),
) -> None:
    """Create a new bank from a JSONL file of entries."""
    from localfin.errors import LocalfinError

    try:
        _add(bank, entries, embedder, threads, batch, fresh=True)
    except LocalfinError as exc:
        _fail(exc)


@app.command("add")
def add(
    entries: Path = typer.Argument(..., help="JSONL of entries to append."),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    batch: int = typer.Option(256),
) -> None:
    """Append entries to an existing (or new) bank."""
    from localfin.errors import LocalfinError

    try:
        _add(bank, entries, embedder, threads, batch, fresh=False)
    except LocalfinError as exc:
        _fail(exc)


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
    from bank.retrieval import Retriever, format_memory_block
    from bank.schema import RetrievalConfig
    from bank.store import ExperienceBank
    from localfin.errors import LocalfinError

    try:
        cfg = RetrievalConfig(tau=tau, k_max=k_max or None)
        with ExperienceBank.open(bank) as b:
            res = Retriever(b, _embedder(embedder, threads), cfg).retrieve(question, context)
    except LocalfinError as exc:
        _fail(exc)
        return
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
    from collections import Counter

    from bank.store import ExperienceBank
    from localfin.errors import LocalfinError

    try:
        with ExperienceBank.open(bank) as b:
            report = b.integrity_check()
            typer.echo(
                json.dumps(
                    {
                        "bank": str(bank),
                        "rows": len(b),
                        "model_id": b.model_id,
                        "dim": b.dim,
                        "sources": len(set(b.sources)),
                        "datasets": dict(Counter(b.datasets())),
                        "index_rows": report.index_rows,
                        "integrity": list(report.checks),
                    }
                )
            )
    except LocalfinError as exc:
        _fail(exc)


@app.command("analyze")
def analyze(
    queries: Path = typer.Argument(..., help="JSONL with 'question' (and optional 'context')."),
    bank: Path = _BANK,
    embedder: str = _EMB,
    threads: int = _THREADS,
    out: Path = typer.Option(Path("localfin_data/bank_analysis"), help="Output folder."),
    steps: int = typer.Option(10, help="Snapshots: sizes n/steps, 2n/steps, ..., n."),
    taus: str = typer.Option("0.50,0.55,0.60,0.65,0.70,0.75,0.80,0.85,0.90", help="Comma list."),
    k_max: int = typer.Option(0, help="Cap per query; 0 = uncapped (as the paper's E_n)."),
    order: str = typer.Option("stratified", help="Snapshot order: stratified (paper) or insertion."),
    plots: bool = typer.Option(True, help="Write PNG plots."),
) -> None:
    """Snapshot metrics (H_n, E_n, Jaccard, change fraction) over a tau sweep -> CSV, JSON, PNG."""
    import csv
    import dataclasses

    import numpy as np

    from bank.analytics import similarity_matrix, stratified_order, tau_sweep
    from bank.errors import BankConfigError
    from bank.schema import query_text
    from bank.store import ExperienceBank
    from localfin.errors import LocalfinError

    try:
        tau_list = [float(t) for t in taus.split(",") if t.strip()]
        if order not in ("stratified", "insertion"):
            raise BankConfigError(f"--order must be 'stratified' or 'insertion', got {order!r}")
        rows_in = [
            json.loads(line) for line in queries.read_text(encoding="utf-8").splitlines() if line.strip()
        ]
        texts = [query_text(r["question"], r.get("context", "")) for r in rows_in]
        with ExperienceBank.open(bank) as b:
            emb = _embedder(embedder, threads)
            if b.model_id != emb.model_id:
                raise BankConfigError(f"bank model {b.model_id!r} differs from embedder {emb.model_id!r}")
            sims = similarity_matrix(emb.embed(texts), b.vectors())
            n = len(b)
            perm = stratified_order(b.datasets()) if order == "stratified" else np.arange(n)
            sizes = sorted({0, *(round(n * i / steps) for i in range(1, steps + 1))})
            rows = tau_sweep(sims, b.sources, sizes, tau_list, k_max or None, perm)
    except (LocalfinError, KeyError, OSError, ValueError) as exc:
        _fail(exc)
        return
    out.mkdir(parents=True, exist_ok=True)
    dicts = [dataclasses.asdict(r) for r in rows]
    with open(out / "sweep.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(dicts[0]))
        w.writeheader()
        w.writerows(dicts)
    (out / "sweep.json").write_text(json.dumps(dicts, indent=1), encoding="utf-8")
    written = ["sweep.csv", "sweep.json"]
    if plots:
        from bank.plots import plot_sweep

        written += [p.name for p in plot_sweep(rows, out)]
    typer.echo(json.dumps({"out": str(out), "files": written, "queries": len(texts), "sizes": sizes}))
