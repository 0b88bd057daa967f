"""The one record format: validation, round trip, ratio direction, summary table, README section."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from bench.records import Record, RecordWriter, parse_record, read_records, speedup
from bench.suite.summary import BEGIN, END, format_value, replace_section, summary_markdown


def test_writer_prints_records_that_parse_back() -> None:
    out = io.StringIO()
    w = RecordWriter("kernels", stream=out)
    w.metric(
        "one_window", "time", 0.002, "s", reference="statsmodels", reference_value=0.2, lower_is_better=True
    )
    w.metric(
        "sweep",
        "output_tokens_per_s",
        300.0,
        "tokens/s",
        reference="hf",
        reference_value=100.0,
        lower_is_better=False,
    )
    recs = list(read_records(out.getvalue().splitlines()))
    assert [r.ratio for r in recs] == [100.0, 3.0]  # above 1 means ours is better, both ways
    assert recs[0].reference == {"name": "statsmodels", "value": 0.2}
    assert recs[0].machine["cpus"] >= 1 and len(recs[0].machine["loadavg"]) == 3
    assert recs == w.records


def test_speedup_is_none_without_both_sides() -> None:
    assert speedup(None, 1.0, lower_is_better=True) is None
    assert speedup(2.0, 0.0, lower_is_better=False) is None
    assert speedup(2.0, 4.0, lower_is_better=True) == 2.0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"unit": "parsecs"}, "Record.unit='parsecs'"),
        ({"metric": ""}, "Record.metric=''"),
        ({"reference": {"name": "x"}}, "Record.reference="),
        ({"value": [1, 2]}, "Record.value="),
        ({"ratio": "big"}, "Record.ratio="),
    ],
)
def test_bad_records_name_the_field(kwargs: dict, message: str) -> None:
    base = dict(benchmark="b", case="c", metric="m", value=1.0, unit="s")
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("(", r"\(")):
        Record(**{**base, **kwargs})


def test_parse_rejects_missing_and_unknown_fields() -> None:
    line = RecordWriter("x", stream=io.StringIO()).metric("c", "m", 1, "count").to_json()
    data = json.loads(line)
    data.pop("machine")
    data["extra"] = 1
    with pytest.raises(ValueError, match=r"missing \['machine'\], unexpected \['extra'\]"):
        parse_record(json.dumps(data))


def test_writer_needs_a_direction_with_a_reference() -> None:
    w = RecordWriter("x", stream=io.StringIO())
    with pytest.raises(ValueError, match="lower_is_better"):
        w.metric("c", "m", 1.0, "s", reference="r", reference_value=2.0)


def test_summary_lists_headlines_and_skips_in_order() -> None:
    w = RecordWriter("kernels", stream=io.StringIO())
    w.metric(
        "rescreen",
        "time",
        0.5,
        "s",
        reference="statsmodels",
        reference_value=500.0,
        lower_is_better=True,
        headline=True,
        label="daily re-screen",
        statsmodels_extrapolated=True,
        statsmodels_cells_measured=8,
    )
    w.metric("rescreen", "time_1thread", 0.9, "s")  # not a headline
    a = RecordWriter("agent", stream=io.StringIO())
    a.metric("moira", "status", "skipped", "", reason="agent.pairs.experiment.run is not importable yet")
    md = summary_markdown(w.records + a.records, command="localfin bench all")
    rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| bench")]
    assert len(rows) == 2
    assert "daily re-screen" in rows[0] and "**1,000×**" in rows[0] and "extrapolated from 8" in rows[0]
    assert rows[1].startswith("| agent | moira | skipped |") and "not importable yet" in rows[1]
    assert "`localfin bench all`" in md


def test_format_value_units() -> None:
    assert format_value(4e-5, "s") == "40 µs"
    assert format_value(0.25, "s") == "250 ms"
    assert format_value(7037.0, "s") == "117 min"
    assert format_value(1.0, "fraction") == "100%"
    assert format_value(None, "s") == "n/a"
    assert format_value(532.4, "tokens/s") == "532 tokens/s"


def test_replace_section_only_between_markers(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\nintro\n{BEGIN}\nold table\n{END}\n\nafter\n", encoding="utf-8")
    assert replace_section(readme, "| new |\n")
    text = readme.read_text(encoding="utf-8")
    assert "old table" not in text and "| new |" in text and text.endswith("after\n") and "intro" in text
    plain = tmp_path / "PLAIN.md"
    plain.write_text("no markers\n", encoding="utf-8")
    assert not replace_section(plain, "| new |") and plain.read_text(encoding="utf-8") == "no markers\n"


def test_length_table_compares_at_equal_lengths() -> None:
    from bench.suite.summary import serving_lengths_markdown

    w = RecordWriter("serving", stream=io.StringIO())
    for backend, tput in (("vllm", 300.0), ("transformers", 100.0)):
        w.metric(
            "length_sweep",
            "output_tokens_per_s",
            tput,
            "tokens/s",
            backend=backend,
            prompt_tokens_target=128,
            max_tokens=64,
            concurrency=16,
            mean_prompt_tokens=131.0,
            ttft_p50_ms=None if backend == "vllm" else 250.0,
            itl_p50_ms=None,
        )
    rows = serving_lengths_markdown(w.records).splitlines()[2:]
    assert rows[0] == "| vllm | 131 | 64 | 16 | 300 | **3×** |  |  |"
    assert rows[1] == "| transformers | 131 | 64 | 16 | 100 |  | 250 ms |  |"
    assert serving_lengths_markdown([]) == ""
