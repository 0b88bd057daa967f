"""The visual decoder: OCR of chart and table images into structured text, and a re-parse tool.

Engine: ``rapidocr-onnxruntime`` 1.4.4 (PP-OCRv4 detection and recognition models shipped
inside the wheel, 16 MB; runs offline on onnxruntime). Its onnxruntime build has telemetry
on by default (it writes a device id under ``~/.cache/Microsoft`` at start and looks up a
remote host about 9 s later); :class:`OcrEngine` sets ``ORT_DISABLE_TELEMETRY=1`` (with the
rest of :func:`localfin.env.offline_env`) before onnxruntime is imported, and a test runs
the OCR in a subprocess under strace with an empty home folder to prove that nothing is
looked up or written. opencv comes as ``opencv-python-headless`` (the project installs
rapidocr without its ``opencv-python`` requirement: both provide ``cv2``).

A :class:`Transcription` keeps every box (text, corner points, confidence) and groups them
into lines: boxes whose vertical centres lie within half a median box height form one line,
ordered left to right and joined with `` | `` (table cells stay apart). Boxes below
``low_confidence`` (0.80) are flagged and marked ``[?]`` in the text, so the solver knows
which readings to doubt. Small text is often read better larger: when the median box of a
first pass is lower than ``small_text_px`` (16 px) the image is read again at 2x (cubic), the
boxes are mapped back to the original pixels and, box by box, the more confident of the two
readings is kept (2x fixed misread digits in some images and broke "1,234.56" into
"1.234.56" in others). Only images up to 1000 px on their longer side are upscaled: the
engine shrinks anything above 2000 px, which would undo it.

:class:`ReparseImageTool` (the Tool protocol) lets the loop re-read one image of its question,
whole or a region (fractions of width and height), in ``auto`` mode or forced ``upscale``,
when a computation contradicts a value read before.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent.qa.core.numbers import find_numbers
from agent.qa.tools.base import ToolResult
from localfin.env import apply_offline_env
from localfin.errors import ConfigError, InputError

__all__ = [
    "OcrBox",
    "Transcription",
    "OcrEngine",
    "transcribe",
    "transcribe_images",
    "ReparseImageTool",
    "MODES",
]

log = logging.getLogger(__name__)

#: Re-parse modes: ``auto`` upscales small text only, ``upscale`` always reads at 2x.
MODES = ("auto", "upscale")
#: Longest image side the engine works on by default (rapidocr's ``max_side_len``; larger
#: images are shrunk to it), so ``auto`` upscales only images up to half of it.
MAX_SIDE = 2000


@dataclass(frozen=True)
class OcrBox:
    """One recognised text box: its text, four corner points (x, y) in pixels of the original
    image, the recogniser's confidence in [0, 1], and whether that is below the threshold."""

    text: str
    points: tuple[tuple[float, float], ...]
    confidence: float
    low_confidence: bool

    @property
    def top(self) -> float:
        return min(p[1] for p in self.points)

    @property
    def bottom(self) -> float:
        return max(p[1] for p in self.points)

    @property
    def left(self) -> float:
        return min(p[0] for p in self.points)

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def center_y(self) -> float:
        return (self.top + self.bottom) / 2.0


@dataclass(frozen=True)
class Transcription:
    """The OCR of one image.

    Attributes:
        path: the image file.
        boxes: every box kept, in reading order.
        lines: the boxes grouped into lines (cells joined by `` | ``; ``[?]`` after a
            low-confidence box).
        width, height: image size in pixels.
        upscaled: True when the image was also (or only, in ``upscale`` mode) read at 2x.
        seconds: wall time of the OCR.
    """

    path: str
    boxes: tuple[OcrBox, ...]
    lines: tuple[str, ...]
    width: int
    height: int
    upscaled: bool
    seconds: float

    @property
    def n_low_confidence(self) -> int:
        return sum(b.low_confidence for b in self.boxes)

    def text(self, label: str = "") -> str:
        """The structured text for a prompt: a header line, then one line per text line."""
        head = f"{label} " if label else ""
        flag = (
            f", {self.n_low_confidence} low-confidence reading(s) marked [?]" if self.n_low_confidence else ""
        )
        body = "\n".join(self.lines) if self.lines else "(no text found)"
        return f"{head}OCR of {Path(self.path).name} ({self.width}x{self.height} px{flag}):\n{body}"

    def numbers(self) -> tuple[float, ...]:
        """Every number the transcription reads (for the answer gate's provenance check)."""
        return tuple(n.value for line in self.lines for n in find_numbers(line.replace("[?]", "")))


def _iou(a: OcrBox, b: OcrBox) -> float:
    ax0, ax1 = a.left, max(p[0] for p in a.points)
    bx0, bx1 = b.left, max(p[0] for p in b.points)
    w = min(ax1, bx1) - max(ax0, bx0)
    h = min(a.bottom, b.bottom) - max(a.top, b.top)
    if w <= 0 or h <= 0:
        return 0.0
    inter = w * h
    union = (ax1 - ax0) * a.height + (bx1 - bx0) * b.height - inter
    return inter / union if union > 0 else 0.0


def _merge_passes(first: list[OcrBox], second: list[OcrBox], min_iou: float = 0.3) -> list[OcrBox]:
    """Box by box, the more confident of two readings of the same text (matched by overlap);
    a box only one pass found is kept unless it overlaps one already kept."""
    kept: list[OcrBox] = []
    used: set[int] = set()
    for a in first:
        score, j = max(((_iou(a, b), j) for j, b in enumerate(second) if j not in used), default=(0.0, -1))
        if score >= min_iou:
            used.add(j)
            kept.append(a if a.confidence >= second[j].confidence else second[j])
        else:
            kept.append(a)
    kept += [b for j, b in enumerate(second) if j not in used and all(_iou(b, k) < min_iou for k in kept)]
    return kept


def _group_lines(boxes: list[OcrBox]) -> list[list[OcrBox]]:
    if not boxes:
        return []
    tol = 0.5 * statistics.median(b.height for b in boxes)
    rows: list[list[OcrBox]] = []
    for b in sorted(boxes, key=lambda b: (b.center_y, b.left)):
        if rows and abs(b.center_y - statistics.fmean(x.center_y for x in rows[-1])) <= tol:
            rows[-1].append(b)
        else:
            rows.append([b])
    return [sorted(r, key=lambda b: b.left) for r in rows]


class OcrEngine:
    """A loaded OCR engine (about 0.5 s to load; reuse it for every image of a run).

    Args:
        low_confidence: boxes below this confidence are flagged (0..1).
        small_text_px: median box height (pixels) below which the image is re-read at 2x.
        min_confidence: boxes below this are dropped as noise (0..1, below low_confidence).
        threads: onnxruntime intra-op threads (default 1; None: the library's default, all
            cores). One thread per image was faster on a busy 2-core machine (2.5 s against
            4.1-5.8 s for a demo table image) since ORT's spinning threads contend with every
            other process; pass more on an idle many-core workstation.
        cache_size: transcriptions kept in memory, keyed by file (path, size, mtime), region
            and mode: the same image read again (another variant, trajectory or re-parse with
            the same arguments) costs nothing.
        max_side: longest image side the engine reads (pixels); a larger image is shrunk to it.
    """

    def __init__(
        self,
        *,
        low_confidence: float = 0.80,
        small_text_px: float = 16.0,
        min_confidence: float = 0.30,
        threads: int | None = 1,
        cache_size: int = 256,
        max_side: int = MAX_SIDE,
    ) -> None:
        if not 0.0 <= min_confidence <= low_confidence <= 1.0:
            raise ConfigError(
                f"min_confidence={min_confidence}, low_confidence={low_confidence}; "
                "allowed: 0 <= min_confidence <= low_confidence <= 1"
            )
        if not 1.0 <= small_text_px <= 200.0:
            raise ConfigError(f"small_text_px={small_text_px}; allowed: 1..200")
        if threads is not None and not 1 <= threads <= 64:
            raise ConfigError(f"threads={threads}; allowed: 1..64 or None")
        self.low_confidence = low_confidence
        self.small_text_px = small_text_px
        self.min_confidence = min_confidence
        if not 100 <= max_side <= 20_000:
            raise ConfigError(f"max_side={max_side}; allowed: 100..20000")
        self.max_side = max_side
        if not 0 <= cache_size <= 100_000:
            raise ConfigError(f"cache_size={cache_size}; allowed: 0..100000")
        self._cache: dict[tuple[Any, ...], Transcription] = {}
        self._cache_size = cache_size

        apply_offline_env()  # ORT_DISABLE_TELEMETRY=1 must be set before onnxruntime initialises
        from rapidocr_onnxruntime import RapidOCR

        kwargs: dict[str, Any] = {"text_score": min_confidence, "max_side_len": max_side}
        if threads is not None:
            kwargs.update(intra_op_num_threads=threads, inter_op_num_threads=1)
        self._ocr = RapidOCR(**kwargs)

    def _read(self, img: Any, scale: float) -> list[OcrBox]:
        result, _ = self._ocr(img)
        boxes = []
        for pts, text, score in result or []:
            conf = round(float(score), 4)
            if conf < self.min_confidence or not str(text).strip():
                continue
            points = tuple((float(x) / scale, float(y) / scale) for x, y in pts)
            boxes.append(OcrBox(str(text).strip(), points, conf, conf < self.low_confidence))
        return boxes

    def transcribe(
        self, path: str | Path, *, region: Sequence[float] | None = None, mode: str = "auto"
    ) -> Transcription:
        """OCR of the image at ``path`` (or of ``region`` = [x0, y0, x1, y1] as fractions of its
        width and height); ``mode`` is one of :data:`MODES`. Raises InputError for a missing or
        unreadable image."""
        import cv2

        if mode not in MODES:
            raise ConfigError(f"mode={mode!r}; allowed: {', '.join(MODES)}")
        p = Path(path)
        img = cv2.imread(str(p), cv2.IMREAD_COLOR) if p.is_file() else None
        if img is None:
            raise InputError(f"cannot read image {p} (missing, or not an image file)")
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns, tuple(region) if region else None, mode)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        height, width = img.shape[:2]
        x_off = y_off = 0.0
        if region is not None:
            x0, y0, x1, y1 = _check_region(region)
            x_off, y_off = round(x0 * width), round(y0 * height)
            img = img[
                int(y_off) : max(int(y_off) + 1, round(y1 * height)),
                int(x_off) : max(int(x_off) + 1, round(x1 * width)),
            ]
        t0 = time.perf_counter()
        upscaled = mode == "upscale"
        boxes = [] if upscaled else self._read(img, 1.0)
        small = bool(boxes) and statistics.median(b.height for b in boxes) < self.small_text_px
        big = None
        if upscaled or (small and 2 * max(img.shape[:2]) <= self.max_side):
            # the engine shrinks any side above max_side back down, so 2x only helps below half
            big = self._read(cv2.resize(img, None, fx=2.0, fy=2.0, interpolation=cv2.INTER_CUBIC), 2.0)
        if big is not None:
            boxes = big if upscaled else _merge_passes(boxes, big)
            upscaled = True
        if x_off or y_off:
            boxes = [
                OcrBox(
                    b.text, tuple((x + x_off, y + y_off) for x, y in b.points), b.confidence, b.low_confidence
                )
                for b in boxes
            ]
        rows = _group_lines(boxes)
        lines = tuple(" | ".join(b.text + (" [?]" if b.low_confidence else "") for b in r) for r in rows)
        ordered = tuple(b for r in rows for b in r)
        seconds = time.perf_counter() - t0
        log.debug("OCR %s: %d boxes, upscaled=%s, %.2f s", p.name, len(ordered), upscaled, seconds)
        tr = Transcription(str(p), ordered, lines, int(width), int(height), upscaled, seconds)
        if self._cache_size:
            if len(self._cache) >= self._cache_size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = tr
        return tr


def _check_region(region: Sequence[float]) -> tuple[float, float, float, float]:
    if len(region) != 4:
        raise ConfigError(f"region={list(region)!r}; allowed: [x0, y0, x1, y1] fractions in 0..1")
    x0, y0, x1, y1 = (float(v) for v in region)
    if not (0.0 <= x0 < x1 <= 1.0 and 0.0 <= y0 < y1 <= 1.0):
        raise ConfigError(f"region={list(region)!r}; allowed: 0 <= x0 < x1 <= 1 and 0 <= y0 < y1 <= 1")
    return x0, y0, x1, y1


def transcribe(path: str | Path, *, engine: OcrEngine | None = None) -> Transcription:
    """OCR of one image (a new engine is loaded when none is given)."""
    return (engine or OcrEngine()).transcribe(path)


def transcribe_images(images: Sequence[str | Path], engine: OcrEngine) -> tuple[str, tuple[float, ...]]:
    """The pre-loop OCR of a question's images: the structured text to prepend to its context
    (one block per image, labelled ``[image N]`` as the question's ``<image N>`` markers) and
    every number read (for the answer gate). An unreadable image gets a one-line note."""
    blocks: list[str] = []
    numbers: list[float] = []
    for n, img in enumerate(images, start=1):
        try:
            tr = engine.transcribe(img)
        except InputError as exc:
            blocks.append(f"[image {n}] not transcribed: {exc}")
            continue
        blocks.append(tr.text(f"[image {n}]"))
        numbers.extend(tr.numbers())
    return "\n\n".join(blocks), tuple(numbers)


class ReparseImageTool:
    """Re-read one of the question's images, whole or a region, with OCR (Tool protocol).

    Args:
        images: the question's image files, in ``<image N>`` order (N is 1-based).
        engine: a loaded :class:`OcrEngine` (shared across questions); loaded on first use if
            None.
    """

    name = "reparse_image"
    description = (
        "Re-read an image of the question with OCR: image number (1-based), optional region "
        "[x0, y0, x1, y1] as fractions of width and height, mode auto or upscale (2x)."
    )

    def __init__(self, images: Sequence[str], engine: OcrEngine | None = None) -> None:
        self.images = tuple(str(i) for i in images)
        self._engine = engine
        self.args_schema: Mapping[str, Any] = {
            "type": "object",
            "properties": {
                "image": {"type": "integer", "minimum": 1, "maximum": max(1, len(self.images))},
                "region": {
                    "type": "array",
                    "items": {"type": "number", "minimum": 0, "maximum": 1},
                    "minItems": 4,
                    "maxItems": 4,
                },
                "mode": {"type": "string", "enum": list(MODES)},
            },
            "required": ["image"],
            "additionalProperties": False,
        }

    def __call__(self, args: Mapping[str, Any]) -> ToolResult:
        if not isinstance(args, Mapping):
            return ToolResult(False, "arguments must be an object", error="bad_args")
        extra = set(args) - {"image", "region", "mode"}
        if extra:
            return ToolResult(
                False, f"unknown argument(s) {sorted(extra)}; allowed: image, region, mode", error="bad_args"
            )
        idx = args.get("image")
        if isinstance(idx, bool) or not isinstance(idx, int) or not 1 <= idx <= len(self.images):
            allowed = f"1..{len(self.images)}" if self.images else "none (this question has no image)"
            return ToolResult(False, f"image={idx!r}; allowed: {allowed}", error="bad_args")
        mode = args.get("mode", "auto")
        region = args.get("region")
        try:
            if region is not None:
                if not isinstance(region, (list, tuple)) or not all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) for v in region
                ):
                    raise ConfigError(f"region={region!r}; allowed: [x0, y0, x1, y1] fractions in 0..1")
                _check_region(region)
            if self._engine is None:
                self._engine = OcrEngine()
            tr = self._engine.transcribe(self.images[idx - 1], region=region, mode=mode)
        except ConfigError as exc:
            return ToolResult(False, str(exc), error="bad_args")
        except InputError as exc:
            return ToolResult(False, str(exc), error="exception")
        where = f" region {list(region)}" if region is not None else ""
        return ToolResult(True, tr.text(f"[image {idx}{where}, mode {mode}]"), numbers=tr.numbers())

    def close(self) -> None:
        """Nothing per question to release (the engine is shared)."""
