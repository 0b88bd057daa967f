"""The report's financial-QA panel: every qa_report.json under the input (as the QA demo writes it)
becomes a table whose numbers are the document's, with a working link to the demo's Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import report_support as rs
from test_report_page import parse

from agent.report.build import build_report
from agent.report.qa import find_qa_reports, qa_rows


def _summary(variant: str, correct: int, n: int, hit: float | None, tokens: float) -> dict:
    """The fields of agent.qa.evaluation.evaluate.EvalSummary the panel reads."""
    return {
        "variant": variant,
        "n": n,
        "correct": correct,
        "accuracy": correct / n,
        "mean_total_tokens": tokens,
        "mean_engine_s": 0.5,
        "memory_hit_rate": hit,
        "fallbacks": {"qa_solve": 1} if variant == "ft" else {},
        "model_calls": 12,
    }


def _qa_demo(folder: Path) -> Path:
    folder.mkdir(parents=True)
    doc = {
        "model": "smollm2-135m",
        "sandbox": "isolated",
        "bank": {"entries_added": 5, "items": 4},
        "variants": {
            "base": _summary("base", 1, 10, None, 300.0),
            "ft": _summary("ft", 2, 10, None, 900.0),
            "ft_fm": _summary("ft_fm", 3, 10, 0.6, 1100.0) | {"bank_rows": 7},
        },
        "wall_s": {"bank_build": 40.0, "base": 10.0, "ft": 30.0, "ft_fm": 35.5, "total": 120.0},
    }
    (folder / "qa_report.json").write_text(json.dumps(doc), encoding="utf-8")
    (folder / "qa_report.md").write_text("## QA\n", encoding="utf-8")
    return folder / "qa_report.json"


def test_the_qa_panel_shows_each_variant_with_a_link(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    rs.experiment(root / "moira")
    doc_path = _qa_demo(root / "qa")
    assert find_qa_reports(root) == [doc_path]
    res = build_report(root, root / "report")
    page = parse(res.html)
    text = " ".join(page.text)
    assert "Financial QA (FinAcumen)" in text and "qa_report.md" in text
    html = res.html.read_text(encoding="utf-8")
    assert 'href="../qa/qa_report.md"' in html and (res.out_dir / "../qa/qa_report.md").is_file()
    rows = {r["variant"]: r for r in qa_rows(json.loads(doc_path.read_text()))}
    assert rows["Base+FT+FM"]["memory_hit_rate"] == 0.6 and rows["Base"]["memory_hit_rate"] is None
    assert rows["Base+FT"]["fallbacks"] == 1 and rows["Base+FT+FM"]["wall_s"] == 35.5
    for phrase in ("3/10 (30%)", "60%", "1100", "35.5", "bank: 7 entries from 4 training questions"):
        assert phrase in text, phrase
    assert "answered from the journals" not in text  # 12 model calls per variant: not a replay


def test_an_unreadable_qa_document_is_named(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    rs.experiment(root / "moira")
    (root / "qa").mkdir()
    (root / "qa" / "qa_report.json").write_text('{"variants": {"base": {}}}', encoding="utf-8")
    res = build_report(root, root / "report")
    assert "qa_report.json: cannot be read (KeyError" in " ".join(parse(res.html).text)
