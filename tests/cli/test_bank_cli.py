"""`localfin bank build|add|query|stats|analyze` with the hashing test embedder."""

from __future__ import annotations

import json
from pathlib import Path


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_bank_cli_roundtrip(tmp_path: Path, cli) -> None:
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
    base = ["--bank", bank, "--embedder", "hashing"]
    r = cli("bank", "build", _write(tmp_path / "e.jsonl", rows), *base)
    assert r.code == 0, r.err
    assert json.loads(r.out)["rows"] == 40
    r = cli("bank", "build", tmp_path / "e.jsonl", *base)
    assert r.code == 2 and "already holds" in r.err and r.err.count("error:") == 1
    r = cli("bank", "add", _write(tmp_path / "f.jsonl", rows[:5]), *base)
    assert r.code == 0 and json.loads(r.out)["rows"] == 45
    r = cli(
        *[
            "bank",
            "query",
            "what is the revenue of segment 3",
            "--context",
            "table " * 200,
            "--tau",
            "0.5",
            *base,
        ]
    )
    hits = [json.loads(line) for line in r.out.strip().splitlines()]
    assert r.code == 0 and 1 <= len(hits) <= 5 and len({h["source_id"] for h in hits}) == len(hits)
    r = cli("bank", "query", "zebra quantum", "--block", *base)
    assert r.code == 0 and r.out.strip() == ""
    r = cli("bank", "stats", "--bank", bank)
    st = json.loads(r.out)
    assert st["rows"] == 45 and st["datasets"] == {"a": 23, "b": 22} and "index" in st["integrity"]
    out = tmp_path / "an"
    queries = _write(tmp_path / "q.jsonl", [{"question": f"revenue of segment {i}"} for i in range(10)])
    r = cli("bank", "analyze", queries, *base, "--out", out, "--steps", "3", "--taus", "0.5,0.65")
    assert r.code == 0, r.err
    assert json.loads(r.out)["files"][:2] == ["sweep.csv", "sweep.json"]
    sweep = json.loads((out / "sweep.json").read_text())
    assert len(sweep) == 2 * 4 and {p.name for p in out.iterdir()} >= {
        "sweep.csv",
        "hit_rate.png",
        "jaccard.png",
    }
    assert all(0.0 <= row["hit_rate"] <= 1.0 for row in sweep)
