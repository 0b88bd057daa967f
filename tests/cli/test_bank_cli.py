"""`localfin bank build|add|query|stats|analyze` with the hashing test embedder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from localfin_cli.main import app


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_bank_cli_roundtrip(tmp_path: Path) -> None:
    runner = CliRunner()
    bank = tmp_path / "bank"
    rows = [
        {
            "source_id": f"s{i}",
            "dataset": "ab"[i % 2],
            "question": f"what is the revenue of segment {i % 7}",
            "context": "table " * 200,
            "findings": [f"finding {i}"],
            "cautions": ["check units"],
        }
        for i in range(40)
    ]
    base = ["--bank", str(bank), "--embedder", "hashing"]
    r = runner.invoke(app, ["bank", "build", str(_write(tmp_path / "e.jsonl", rows)), *base])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output.strip().splitlines()[-1])["rows"] == 40
    r = runner.invoke(app, ["bank", "build", str(tmp_path / "e.jsonl"), *base])
    assert r.exit_code == 2 and "already holds" in r.output
    r = runner.invoke(app, ["bank", "add", str(_write(tmp_path / "f.jsonl", rows[:5])), *base])
    assert r.exit_code == 0 and json.loads(r.output.strip().splitlines()[-1])["rows"] == 45
    r = runner.invoke(
        app,
        [
            "bank",
            "query",
            "what is the revenue of segment 3",
            "--context",
            "table " * 200,
            "--tau",
            "0.5",
            *base,
        ],
    )
    hits = [json.loads(line) for line in r.output.strip().splitlines()]
    assert r.exit_code == 0 and 1 <= len(hits) <= 5 and len({h["source_id"] for h in hits}) == len(hits)
    r = runner.invoke(app, ["bank", "query", "zebra quantum", "--block", *base])
    assert r.exit_code == 0 and r.output.strip() == ""
    r = runner.invoke(app, ["bank", "stats", "--bank", str(bank)])
    st = json.loads(r.output)
    assert st["rows"] == 45 and st["datasets"] == {"a": 23, "b": 22} and "index" in st["integrity"]
    out = tmp_path / "an"
    queries = _write(tmp_path / "q.jsonl", [{"question": f"revenue of segment {i}"} for i in range(10)])
    r = runner.invoke(
        app, ["bank", "analyze", str(queries), *base, "--out", str(out), "--steps", "3", "--taus", "0.5,0.65"]
    )
    assert r.exit_code == 0, r.output
    sweep = json.loads((out / "sweep.json").read_text())
    assert len(sweep) == 2 * 4 and {p.name for p in out.iterdir()} >= {
        "sweep.csv",
        "hit_rate.png",
        "jaccard.png",
    }
    assert all(0.0 <= row["hit_rate"] <= 1.0 for row in sweep)
