"""The visual decoder on the demo set's charts and tables, its flags and re-parse tool, and a
subprocess check that onnxruntime neither looks anything up nor writes under the home folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agent.qa.core.numbers import find_numbers
from agent.qa.data.datasets import load_items
from agent.qa.data.demo_set import build_demo_set
from agent.qa.tools.base import Tool
from agent.qa.tools.ocr import OcrBox, OcrEngine, ReparseImageTool, _merge_passes, transcribe_images
from localfin.errors import ConfigError, InputError

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def engine() -> OcrEngine:
    return OcrEngine()


@pytest.fixture(scope="module")
def image_items(tmp_path_factory: pytest.TempPathFactory):
    # the first six dealt questions hold one of each kind, so one chart and one table image
    out = build_demo_set(tmp_path_factory.mktemp("demo_ocr"), seed=0, n_train=3, n_test=3)
    items = [i for i in load_items("demo", out).items if i.question.images]
    assert {i.gold.extra["kind"] for i in items} == {"chart_value", "table_sum"}
    return items


def _small_text_png(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # squat images are costly: the detector scales the shorter side up to 736 px
    fig = plt.figure(figsize=(1.8, 1.0), dpi=100)
    fig.text(0.06, 0.62, "Net sales 1,234.56", fontsize=7)
    fig.text(0.06, 0.25, "Cost 789.01", fontsize=7)
    fig.savefig(path, format="png", metadata={"Software": None})
    plt.close(fig)
    return path


def test_demo_chart_and_table_read_exactly(engine, image_items):
    for it in image_items:
        tr = engine.transcribe(it.question.images[0])
        assert tr.seconds > 0 and tr.width > 0
        if it.gold.extra["kind"] == "chart_value":
            # values print in one row above the bars, months in one row below: same column
            month = it.question.text.split(" close in ")[1].split("?")[0]  # e.g. "Mar 2015"
            k = next(n for n, ln in enumerate(tr.lines) if month.split()[0] in ln)
            months = [c.strip() for c in tr.lines[k].split("|")]
            col = next(n for n, c in enumerate(months) if c.startswith(month.split()[0]))
            values = [float(c) for c in tr.lines[k - 1].split("|")]
            assert len(values) == len(months) == 6
            assert values[col] == pytest.approx(it.gold.answer)
        else:
            revenue = next(ln for ln in tr.lines if ln.startswith("Revenue"))
            values = [n.value for n in find_numbers(revenue)]
            assert len(values) == 4
            assert abs(sum(values) - it.gold.answer) <= it.gold.extra["abs_tol"] + 1e-9


def _box(text: str, x0: float, y0: float, x1: float, y1: float, conf: float) -> OcrBox:
    return OcrBox(text, ((x0, y0), (x1, y0), (x1, y1), (x0, y1)), conf, conf < 0.8)


def test_two_readings_merge_box_by_box_on_confidence():
    first = [_box("1,234.56", 0, 0, 50, 10, 0.99), _box("Cost 789.0l", 0, 20, 50, 30, 0.70)]
    second = [
        _box("1.234.56", 1, 0, 51, 10, 0.95),
        _box("Cost 789.01", 0, 21, 50, 31, 0.97),
        _box("Total", 0, 40, 30, 50, 0.9),
    ]
    merged = _merge_passes(first, second)
    assert [b.text for b in merged] == ["1,234.56", "Cost 789.01", "Total"]
    assert _merge_passes([], second) == second


def test_pre_loop_text_labels_every_image(engine, image_items):
    paths = [i.question.images[0] for i in image_items]  # read before: served from the cache
    text, numbers = transcribe_images([*paths, "/nonexistent/gone.png"], engine)
    assert "[image 1] OCR of" in text and "[image 2] OCR of" in text
    assert "[image 3] not transcribed" in text
    chart = next(i for i in image_items if i.gold.extra["kind"] == "chart_value")
    assert chart.gold.answer in numbers


def test_small_text_is_read_at_twice_the_size(engine, tmp_path):
    png = _small_text_png(tmp_path / "small.png")
    tr = engine.transcribe(png)
    assert tr.upscaled
    assert {1234.56, 789.01} <= set(tr.numbers())
    assert max(p[0] for b in tr.boxes for p in b.points) <= tr.width  # boxes mapped back to 1x pixels


def test_low_confidence_boxes_are_flagged_and_marked(tmp_path):
    strict = OcrEngine(low_confidence=0.999, min_confidence=0.0)
    tr = strict.transcribe(_small_text_png(tmp_path / "small.png"))
    flagged = [b for b in tr.boxes if b.low_confidence]
    assert flagged and all(b.confidence < 0.999 for b in flagged)
    assert all(b.confidence >= 0.999 for b in tr.boxes if not b.low_confidence)
    assert tr.n_low_confidence == len(flagged)
    assert sum(line.count("[?]") for line in tr.lines) == len(flagged)
    assert "low-confidence" in tr.text()


def test_region_and_reparse_tool(engine, image_items):
    table = next(i for i in image_items if i.gold.extra["kind"] == "table_sum")
    chart = next(i for i in image_items if i.gold.extra["kind"] == "chart_value")
    tool = ReparseImageTool([chart.question.images[0], table.question.images[0]], engine=engine)
    assert isinstance(tool, Tool)
    assert tool.args_schema["properties"]["image"]["maximum"] == 2
    whole = tool({"image": 2})
    assert whole.ok and "quarterly" in whole.text.lower().replace(" ", "")
    lower = tool({"image": 2, "region": [0.0, 0.55, 1.0, 1.0], "mode": "upscale"})
    assert lower.ok and "Revenue" in lower.text and "quarterly" not in lower.text.lower().replace(" ", "")
    assert len(lower.numbers) >= 4
    for args, needle in [
        ({"image": 0}, "allowed: 1..2"),
        ({"image": 3}, "allowed: 1..2"),
        ({"image": "1"}, "image='1'"),
        ({"image": 1, "mode": "fast"}, "mode='fast'"),
        ({"image": 1, "region": [0.5, 0.0, 0.4, 1.0]}, "x0 < x1"),
        ({"image": 1, "region": [0, 0, 1]}, "[x0, y0, x1, y1]"),
        ({"image": 1, "zoom": 2}, "unknown argument"),
    ]:
        r = tool(args)
        assert not r.ok and r.error == "bad_args" and needle in r.text, (args, r.text)
    gone = ReparseImageTool(["/nonexistent/x.png"], engine=engine)({"image": 1})
    assert not gone.ok and "cannot read image" in gone.text
    none = ReparseImageTool([], engine=engine)({"image": 1})
    assert not none.ok and "no image" in none.text


def test_engine_arguments_and_missing_file(engine):
    with pytest.raises(ConfigError, match="min_confidence"):
        OcrEngine(low_confidence=0.2, min_confidence=0.5)
    with pytest.raises(InputError, match=r"missing\.png"):
        engine.transcribe("/nonexistent/missing.png")


_OCR_CHILD = """
import sys, time
from agent.qa.tools.ocr import OcrEngine
tr = OcrEngine(threads=1).transcribe(sys.argv[1])
assert tr.lines, "no text read"
time.sleep(float(sys.argv[2]))  # onnxruntime's uploader looked a host up about 9 s after start
print("done")
"""


def _child_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY" and not k.startswith("XDG_")}
    env.update(HOME=str(home), PYTHONPATH=str(REPO))
    return env


def _network_syscalls(trace: Path) -> list[str]:
    bad = []
    for line in trace.read_text(errors="replace").splitlines():
        if ("connect(" in line or "sendto(" in line) and ("AF_INET" in line or "nscd" in line):
            bad.append(line[:160])
    return bad


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to watch the child's syscalls")
def test_ocr_child_makes_no_lookup_and_writes_nothing_home(tmp_path, image_items):
    home = tmp_path / "home"
    home.mkdir()
    trace = tmp_path / "trace.txt"
    proc = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-e",
            "trace=connect,sendto",
            "-o",
            str(trace),
            sys.executable,
            "-c",
            _OCR_CHILD,
        ]
        + [image_items[0].question.images[0], "11"],
        env=_child_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "done" in proc.stdout
    assert _network_syscalls(trace) == []
    assert not (home / ".cache" / "Microsoft").exists()
    assert list(home.rglob("*")) == []


def test_control_onnxruntime_without_the_switch_writes_under_home(tmp_path):
    """The check above can fail: plain onnxruntime, without ORT_DISABLE_TELEMETRY, creates its
    device id under ~/.cache/Microsoft at start (the child exits before any upload)."""
    home = tmp_path / "home"
    home.mkdir()
    code = textwrap.dedent(
        """
        import glob, os, onnxruntime as ort, rapidocr_onnxruntime
        pkg = os.path.dirname(rapidocr_onnxruntime.__file__)
        model = glob.glob(os.path.join(pkg, "models", "*cls*.onnx"))[0]
        ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], env=_child_env(home), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    if not (home / ".cache" / "Microsoft").exists():
        # Seen on the CI machine: its onnxruntime start-up wrote no device id at all, so the
        # home check above proves less there (the strace check still holds).
        pytest.skip("this machine's onnxruntime writes no device id under HOME, even without the switch")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")
def test_control_onnxruntime_without_the_switch_looks_a_host_up(tmp_path):
    """Slow control (about 12 s): without the switch the uploader's DNS lookup shows in strace.
    Run inside a network namespace when `unshare -n` works, so nothing leaves the machine."""
    home = tmp_path / "home"
    home.mkdir()
    trace = tmp_path / "trace.txt"
    code = textwrap.dedent(
        """
        import glob, os, time, onnxruntime as ort, rapidocr_onnxruntime
        pkg = os.path.dirname(rapidocr_onnxruntime.__file__)
        model = glob.glob(os.path.join(pkg, "models", "*cls*.onnx"))[0]
        ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        time.sleep(12)
        """
    )
    prefix = (
        ["unshare", "-n"]
        if shutil.which("unshare") and subprocess.run(["unshare", "-n", "true"]).returncode == 0
        else []
    )
    cmd = [
        *prefix,
        "strace",
        "-f",
        "-qq",
        "-e",
        "trace=connect,sendto",
        "-o",
        str(trace),
        sys.executable,
        "-c",
        code,
    ]
    proc = subprocess.run(cmd, env=_child_env(home), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _network_syscalls(trace)
