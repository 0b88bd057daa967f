"""Build the prediction corpora of the scorer-equality tests and score them with the authors'
own evaluators (see README.md beside this file for the exact commands).

Two steps, each a subcommand:

``corpus``  reads the benchmarks' released gold files and writes, per benchmark, a JSONL file of
            predictions: the gold itself plus the forms a model writes (rounding, scale words,
            percent signs, fractions for percents, accounting negatives, currency marks,
            thousands separators, multi-span orders and joins, trailing punctuation, wrong
            magnitudes, near misses). Deterministic (a seeded generator); standard library only;
            it imports nothing of localfin, so the corpus does not depend on the code it tests.
``score``   runs the authors' evaluator from a checkout of their repository (outside this
            repository, with their dependencies installed) on a corpus file and writes the
            committed table: each row with the evaluator's verdict added.

A TAT-QA prediction is handed to the official ``TaTQAEmAndF1`` twice: as the string the model
wrote, with ``pred_scale=""`` (the string mapping), and as the pair ``(answer, scale)`` that the
documented split rule makes of the string (the pair mapping, as TAT-QA's released evaluation
takes a prediction); a string that is a JSON list (our convention for multi-span answers) is
handed over as that list, each element as ``str``. The split rule is restated here from its
documentation (``agent/qa/scoring/tatqa_metric.py``, rule P) with the standard library only: a
trailing ``%`` or ``thousand``/``million``/``billion``/``percent`` word (optionally followed by
one ".") after a number, or after a JSON list of numbers, is the scale.
A FinMMR prediction is handed to ``get_acc`` as the string, and to the CoT evaluation's check
(``vailid``: a non-empty answer without "none") before it.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import random
import sys
import types
from collections.abc import Iterator
from pathlib import Path

SEED = 17
SCALE_SEED = 29  # the scale cases, added after the first table with their own generator
SPAN_SCALE_SEED = 31  # spans with their scale written in, added after the scale cases
SPAN_SCALE_FORMS_PER_QUESTION = 3
TATQA_FORMS_PER_QUESTION = 3
TATQA_SCALE_FORMS_PER_QUESTION = 2
FINMMR_FORMS_PER_ITEM = 9


# --- helpers shared by both corpora ---------------------------------------------------------
def _plain(x: float) -> str:
    """A number as a person writes it: no exponent, no trailing zeros."""
    if float(x).is_integer() and abs(x) < 1e16:
        return str(int(x))
    text = f"{x:.10f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _commas(x: float, decimals: int | None = None) -> str:
    if decimals is None:
        decimals = 0 if float(x).is_integer() else len(_plain(abs(x)).split(".")[1])
    return f"{x:,.{decimals}f}"


def _accounting(text: str) -> str:
    return f"({text.lstrip('-')})" if text.startswith("-") else text


_SCALE_FACTOR = {"": 1, "thousand": 1e3, "million": 1e6, "billion": 1e9}
_SCALE_ABBREV = {
    "thousand": ["k", "K", "thousands"],
    "million": ["m", "mn", "M", "millions"],
    "billion": ["b", "bn", "B"],
}
_WRONG_SCALE = {"": "million", "thousand": "million", "million": "thousand", "billion": "million"}


# --- TAT-QA -------------------------------------------------------------------------------
def _tatqa_number_forms(value: float, scale: str, rng: random.Random) -> list[str]:
    """Ways to write a numeric answer ``value`` (as stored, in the unit ``scale`` names)."""
    v = _plain(value)
    forms = [v, f"{value:.2f}", f"{value:.1f}", f"{value:.0f}", f"{value:.3f}", _plain(round(value, 2))]
    forms += [_plain(value + 0.01), _plain(value * 1.001), _plain(value * 10), _plain(-value)]
    forms += [_accounting(v), _accounting(_commas(value)), _commas(value), f"{v}."]
    forms += [f"The answer is {v}.", f"approximately {v}", f"{v} (2019)", f"−{_plain(abs(value))}"]
    if scale == "percent":
        frac = value / 100
        forms += [f"{v}%", f"{v} %", f"{v} percent", f"{v}%.", f"{value:.1f}%", f"{value:.0f}%"]
        forms += [_plain(round(frac, 4)), _plain(round(frac, 6)), _plain(round(frac, 2)), f"{frac:.4f}"]
        forms += [f"({v}%)", f"{_plain(-value)}%", f"{v} per cent", f"{_plain(value * 1.01)}%"]
    elif scale:
        big = value * _SCALE_FACTOR[scale]
        forms += [f"{v} {scale}", f"${v} {scale}", f"{v} {scale}.", f"{v} {scale} dollars"]
        forms += [f"{v} {rng.choice(_SCALE_ABBREV[scale])}", f"{v}{rng.choice(_SCALE_ABBREV[scale])}"]
        forms += [f"{v} {scale.capitalize()}", f"{v} {_WRONG_SCALE[scale]}", f"{v} {scale} in 2019"]
        forms += [_commas(big, 0), _plain(big), f"${_commas(big, 0)}", f"{_plain(big)}.0"]
        forms += [f"({v}) {scale}", f"-${v} {scale}", f"USD {v} {scale}", f"€{v} {scale}"]
        forms += [_plain(big * 1000), f"{_plain(round(value))} {scale}", f"{v} billion"]
    else:
        forms += [f"${v}", f"$ {_commas(value)}", f"{v} million", f"{v}%", f"{v} thousand", f"£{v}"]
    return forms


def _tatqa_text_forms(span: str, scale: str, rng: random.Random) -> list[str]:
    words = span.split()
    forms = [
        span,
        span.lower(),
        span.upper(),
        f"{span}.",
        f'"{span}"',
        f"The {span}",
        f"the answer is {span}",
    ]
    forms += [span.replace(",", ""), span.replace("-", " "), f"{span} (see note 5)"]
    if len(words) > 2:
        forms += [" ".join(words[:-1]), " ".join(words[1:]), " ".join(words[: len(words) // 2])]
    if scale:
        forms += [f"{span} {scale}", f"{span} {_WRONG_SCALE.get(scale, 'million')}", f"{span}%"]
    stripped = span.replace("$", "").replace(",", "").strip("()")
    try:
        value = float(stripped)
    except ValueError:
        return forms
    sign = -1.0 if span.strip().startswith("(") or span.strip().startswith("-") else 1.0
    return forms + _tatqa_number_forms(sign * value, scale, rng)


def _tatqa_multi_forms(spans: list[str], scale: str, rng: random.Random) -> list[str]:
    shuffled = spans[:]
    rng.shuffle(shuffled)
    forms = [
        json.dumps(spans),
        json.dumps(spans[::-1]),
        json.dumps(shuffled),
        ", ".join(spans),
        " and ".join(spans),
        "; ".join(spans),
        "\n".join(spans),
        ", ".join(spans[::-1]),
        json.dumps(spans[:-1]),
        json.dumps(spans + ["2019"]),
        json.dumps([s.lower() for s in spans]),
        json.dumps([s.rstrip(".") + "." for s in spans]),
        spans[0],
        json.dumps([spans[0]]),
    ]
    if scale:
        forms += [json.dumps([f"{s} {scale}" for s in spans]), ", ".join(spans) + f" {scale}"]
        forms += [json.dumps([f"{s} {_WRONG_SCALE.get(scale, 'million')}" for s in spans])]
    return forms


def tatqa_rows(dataset: list[dict]) -> Iterator[dict]:
    """Gold plus ``TATQA_FORMS_PER_QUESTION`` sampled forms for every question of the file."""
    rng = random.Random(SEED)
    for doc in dataset:
        for q in doc["questions"]:
            kind, answer, scale = q["answer_type"], q["answer"], q["scale"]
            if kind == "multi-span":
                spans = [str(a) for a in answer]
                gold_form = json.dumps(spans)
                forms = _tatqa_multi_forms(spans, scale, rng)
            elif kind == "span":
                gold_form = str(answer[0])
                forms = _tatqa_text_forms(gold_form, scale, rng)
            elif kind == "count":
                gold_form = str(answer)
                n = int(answer)
                forms = [f"{n}.0", str(n + 1), f"{n} years", f"{n}.", f"There are {n}", str(n - 1)]
            else:
                gold_form = str(answer)
                forms = _tatqa_number_forms(float(answer), scale, rng)
            unique = [f for f in dict.fromkeys(forms) if f and f != gold_form]
            picked = rng.sample(unique, min(TATQA_FORMS_PER_QUESTION, len(unique)))
            for form in [gold_form, *picked]:
                yield {
                    "uid": q["uid"],
                    "answer_type": kind,
                    "answer": answer,
                    "scale": scale,
                    "prediction": form,
                }


_MARKS = set("'\"\\$€£¥%(),[]")
_SCALE_NAMES = ("hundred", "thousand", "million", "billion", "percent")


def _reads_as_number(text: str) -> bool:
    """TAT-QA's ``is_number``: marks dropped, a float first word, a scale word second if any."""
    words = "".join(ch for ch in text if ch not in _MARKS).split()
    if not words:
        return False
    try:
        first = float(words[0])
    except ValueError:
        return False
    if first != first:
        return False
    return len(words) < 2 or any(n in words[1].lower() for n in _SCALE_NAMES)


def _marked(text: str) -> tuple[str, str] | None:
    """A text ending with a scale marker after a number (or a JSON list of numbers)."""
    body = text.strip()
    if body.endswith("."):
        body = body[:-1]
    scale, head = "", None
    if body.endswith("%"):
        scale, head = "percent", body[:-1].rstrip()
    else:
        parts = body.rsplit(None, 1)
        if len(parts) == 2 and parts[1].lower() in ("thousand", "million", "billion", "percent"):
            scale, head = parts[1].lower(), parts[0].rstrip()
    if not head:
        return None
    spans = _tatqa_prediction(head)
    spans = spans if isinstance(spans, list) else [spans]
    if not spans or not all(_reads_as_number(x) for x in spans):
        return None
    return head, scale


def _marked_elements(text: str) -> tuple[list[str], str] | None:
    """A JSON list whose elements each end with the same scale marker after a number."""
    spans = _tatqa_prediction(text)
    if not isinstance(spans, list) or not spans:
        return None
    cut = [_marked(s) for s in spans]
    if any(c is None or c[0].startswith("[") for c in cut) or len({c[1] for c in cut if c}) != 1:
        return None
    return [c[0] for c in cut if c], cut[0][1] if cut[0] else ""


def split_scale(text: str) -> tuple[str, str]:
    """The documented split rule (rule P): ``(answer, scale)`` of an answer string."""
    marked = _marked(text)
    if marked is not None:
        return marked
    elements = _marked_elements(text)
    if elements is not None:
        return json.dumps(elements[0], ensure_ascii=False), elements[1]
    return text, ""


def _states_scale(span: object, scale: str) -> bool:
    text = str(span)
    marks = ("%", "percent") if scale == "percent" else (scale,)
    return _reads_as_number(text) and any(m in text.lower() for m in marks)


def scale_readings(text: str, answer_type: str, answer: object, scale: str) -> list[list[str]]:
    """The pairs rule P reads an answer string as: the split pair and, where a span of a span or
    multi-span gold states the item's scale and the text's scale is that one, the text as
    copied (a trailing "." dropped) with it."""
    first = split_scale(text)
    if not first[1] or first[1] != scale or answer_type not in ("span", "multi-span"):
        return [list(first)]
    if not isinstance(answer, list) or not any(_states_scale(a, scale) for a in answer):
        return [list(first)]
    written = text.strip()
    if written.endswith(".") and not written.startswith("["):
        written = written[:-1].rstrip()
    if _marked_elements(text) is None and written.startswith("["):
        return [list(first)]
    copied = (written, first[1])
    return [list(first)] if copied == first else [list(first), list(copied)]


_UP = {"thousand": "million", "million": "billion"}
_DOWN = {"million": "thousand", "billion": "million"}


def _tatqa_scale_forms(answer: object, scale: str, kind: str) -> list[str]:
    """Answers with their scale written in that the pair and the string score apart: accounting
    negatives with a scale, values within (and just outside) the 2-decimal rounding, scale
    shifts, and multi-span answers with one scale for all spans."""
    if kind == "multi-span":
        spans = [str(a) for a in answer]  # type: ignore[union-attr]
        forms = [json.dumps(spans) + f" {scale}", json.dumps(spans[::-1]) + f" {scale}"]
        return forms + [json.dumps(spans) + f" {_WRONG_SCALE.get(scale, 'million')}"]
    text = str(answer[0]) if isinstance(answer, list) else str(answer)
    try:
        value = float(text.replace("$", "").replace(",", "").replace("%", "").strip("()"))
    except ValueError:
        return []
    if text.strip().startswith("(") or text.strip().startswith("-"):
        value = -abs(value)
    a = abs(value)
    word = "%" if scale == "percent" else f" {scale}"
    forms = [
        f"({_plain(a)}){word}",
        f"({_commas(a)}){word}",
        f"{value + 0.004:.3f}{word}",
        f"{value - 0.004:.3f}{word}",
        f"{value + 0.006:.3f}{word}",
        f"{_plain(round(value, 2))}{word}",
    ]
    if scale in _UP:
        forms += [f"{_plain(value / 1000)} {_UP[scale]}", f"{_plain(round(value / 1000, 3))} {_UP[scale]}"]
    if scale in _DOWN:
        forms += [f"{_commas(value * 1000, 0)} {_DOWN[scale]}", f"{_plain(value * 1000)} {_DOWN[scale]}"]
    if scale == "percent":
        forms += [f"{_plain(value)} percent", f"({_plain(a)}) percent"]
    return forms


def tatqa_scale_rows(dataset: list[dict]) -> Iterator[dict]:
    """``TATQA_SCALE_FORMS_PER_QUESTION`` scale forms for every question with a scale and a
    numeric or multi-span answer (seeded apart from :func:`tatqa_rows`, so that table stays)."""
    rng = random.Random(SCALE_SEED)
    for doc in dataset:
        for q in doc["questions"]:
            kind, answer, scale = q["answer_type"], q["answer"], q["scale"]
            if not scale or kind == "count":
                continue
            forms = [f for f in dict.fromkeys(_tatqa_scale_forms(answer, scale, kind)) if f]
            for form in rng.sample(forms, min(TATQA_SCALE_FORMS_PER_QUESTION, len(forms))):
                yield {
                    "uid": q["uid"],
                    "answer_type": kind,
                    "answer": answer,
                    "scale": scale,
                    "prediction": form,
                }


def tatqa_span_scale_rows(dataset: list[dict]) -> Iterator[dict]:
    """Span and multi-span answers with their scale written into every span, for every such
    question with a scale: the spans each followed by the scale word, accounting negatives
    written with a currency sign and a space (``$ (3.5) million``) or an inner space
    (``(265 ) thousand``), the spans with a wrong scale word, and a gold span that carries its
    own scale word copied as it is (seeded apart, appended after the scale cases)."""
    rng = random.Random(SPAN_SCALE_SEED)
    for doc in dataset:
        for q in doc["questions"]:
            kind, answer, scale = q["answer_type"], q["answer"], q["scale"]
            if not scale or kind not in ("span", "multi-span"):
                continue
            spans = [str(a) for a in answer]
            word = "%" if scale == "percent" else f" {scale}"

            def dollar(s: str) -> str:
                core = s.replace("$", "").strip()
                return f"$ {core}" if core.startswith("(") else f"${core}"

            def inner(s: str) -> str:
                core = s.replace("$", "").strip()
                return f"({core.strip('()')} )" if core.startswith("(") else core

            families = [
                [f"{s}{word}" for s in spans],
                [f"{dollar(s)}{word}" for s in spans],
                [f"{inner(s)}{word}" for s in spans],
                [f"{s} {scale}" for s in spans],
                [f"{s} {_WRONG_SCALE.get(scale, 'million')}" for s in spans],
            ]
            forms = [json.dumps(f) if kind == "multi-span" else f[0] for f in families]
            if any(w in " ".join(spans).lower() for w in ("thousand", "million", "billion", "%")):
                forms.append(json.dumps(spans) if kind == "multi-span" else spans[0])
            forms = [f for f in dict.fromkeys(forms) if f]
            for form in rng.sample(forms, min(SPAN_SCALE_FORMS_PER_QUESTION, len(forms))):
                yield {
                    "uid": q["uid"],
                    "answer_type": kind,
                    "answer": answer,
                    "scale": scale,
                    "prediction": form,
                }


def with_pairs(rows: Iterator[dict]) -> Iterator[dict]:
    """Each row with the pairs the split rule reads its prediction as (``readings``)."""
    for row in rows:
        readings = scale_readings(row["prediction"], row["answer_type"], row["answer"], row["scale"])
        yield {**row, "readings": readings}


# --- FinMMR -------------------------------------------------------------------------------
def _finmmr_forms(gt: float | int, rng: random.Random) -> list[str]:
    v = _plain(gt)
    forms = [repr(gt), v, f"{gt:.2f}", f"{gt:.1f}", f"{gt:.0f}", f"{gt:.3f}", _commas(gt), f"${_commas(gt)}"]
    forms += [
        f"{v}%",
        f"${v}",
        f"{v} million",
        f"{_plain(gt / 1000)} thousand",
        f"{_plain(gt * 1000)} thousand",
    ]
    forms += [f"approximately {v}", f"≈ {v}", f"x = {v}", f"{v} or {_plain(gt * 2)}", f"{v} units"]
    forms += [f"USD {v}", f"RMB {v}", f"{v}元", f"{v}.", f"({v})", _accounting(_commas(gt)), f"{v} dollars"]
    forms += [
        _plain(gt * 1.0019),
        _plain(gt * 0.9981),
        _plain(gt * 1.0021),
        _plain(gt * 0.9979),
        _plain(gt * 1.002),
    ]
    forms += [
        _plain(gt * 1000),
        _plain(gt / 1000),
        _plain(-gt),
        f"{gt:e}",
        f"{v}\n",
        f" {v}",
        f"The answer is {v}",
    ]
    forms += [
        f"{v} + 0",
        f"{_plain(gt * 2)} / 2",
        f"{v}°",
        f"`{v}`",
        f"{v}亿",
        "None",
        "yes",
        "N/A",
        f"{v}, {v}",
        f"{_plain(gt / 1000)} * 10^3",
        f"{_plain(gt / 1000)} x 10^3",
        f"{v}, 10^3",
    ]
    if abs(gt) >= 1e5:
        mantissa = gt / 10 ** (len(str(int(abs(gt)))) - 1)
        forms += [f"{mantissa:.3f} × 10^{len(str(int(abs(gt)))) - 1}", f"{_plain(gt / 1e6)} million"]
    return forms


def finmmr_rows(dataset: list[dict]) -> Iterator[dict]:
    """Gold plus ``FINMMR_FORMS_PER_ITEM`` sampled forms for every item of the file."""
    rng = random.Random(SEED)
    for item in dataset:
        gt = item["ground_truth"]
        unique = [f for f in dict.fromkeys(_finmmr_forms(gt, rng)) if f != repr(gt)]
        picked = rng.sample(unique, min(FINMMR_FORMS_PER_ITEM, len(unique)))
        for form in [repr(gt), *picked]:
            yield {"question_id": item["question_id"], "ground_truth": gt, "prediction": form}


# --- scoring with the authors' evaluators ---------------------------------------------------
def _tatqa_prediction(text: str) -> str | list[str]:
    if text.strip().startswith("["):
        try:
            value = json.loads(text)
        except ValueError:
            return text
        if isinstance(value, list):
            return [str(v) for v in value]
    return text


def score_tatqa(rows: list[dict], checkout: Path) -> Iterator[dict]:
    sys.path.insert(0, str(checkout))
    metric = importlib.import_module("tatqa_metric")

    def official(gold: dict, prediction: str, scale: str) -> tuple[float, float]:
        scorer = metric.TaTQAEmAndF1()
        scorer(ground_truth=gold, prediction=_tatqa_prediction(prediction), pred_scale=scale)
        detail = scorer.get_raw()[-1]
        return float(detail["em"]), float(detail["f1"])

    for row in rows:
        gold = {"answer_type": row["answer_type"], "answer": row["answer"], "scale": row["scale"]}
        em, f1 = official(gold, row["prediction"], "")
        verdicts = [list(official(gold, answer, scale)) for answer, scale in row["readings"]]
        em_pair, f1_pair = max(tuple(v) for v in verdicts)
        yield {
            **row,
            "official_em": em,
            "official_f1": f1,
            "official_readings": verdicts,
            "official_em_pair": em_pair,
            "official_f1_pair": f1_pair,
        }


def score_finmmr(rows: list[dict], checkout: Path) -> Iterator[dict]:
    # get_acc needs nothing of utils.llm (the API client for answer extraction); a stand-in
    # module keeps the import from pulling in openai/anthropic.
    stand_in = types.ModuleType("utils.llm")
    stand_in.LLM = type("LLM", (), {})
    sys.modules["utils.llm"] = stand_in
    sys.path.insert(0, str(checkout / "evaluate"))
    utils = importlib.import_module("utils.evaluation_utils")
    for row in rows:
        pred = row["prediction"]
        acc = int(utils.get_acc(pred, row["ground_truth"]))
        valid = bool(pred) and "none" not in pred.lower()  # eval_cot's check before get_acc
        yield {**row, "official_get_acc": acc, "official_cot_acc": acc if valid else 0}


def _write(path: Path, rows: Iterator[dict]) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("corpus", help="write the prediction corpus of one benchmark")
    c.add_argument("benchmark", choices=["tatqa", "finmmr"])
    c.add_argument("released", type=Path, help="the released gold file")
    c.add_argument("out", type=Path)
    s = sub.add_parser("score", help="score a corpus with the authors' evaluator")
    s.add_argument("benchmark", choices=["tatqa", "finmmr"])
    s.add_argument("checkout", type=Path, help="the authors' repository checkout")
    s.add_argument("corpus", type=Path)
    s.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "corpus":
        data = json.loads(args.released.read_text(encoding="utf-8"))
        if args.benchmark == "tatqa":
            rows = with_pairs(
                itertools.chain(tatqa_rows(data), tatqa_scale_rows(data), tatqa_span_scale_rows(data))
            )
        else:
            rows = finmmr_rows(data)
    else:
        corpus = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines()]
        rows = (score_tatqa if args.benchmark == "tatqa" else score_finmmr)(corpus, args.checkout)
    n = _write(args.out, rows)
    print(f"{args.out}: {n} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
