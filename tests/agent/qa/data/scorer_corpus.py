"""Build the prediction corpora of the named scorers' equality tests and score them with the
released scorers (see README.md beside this file for the exact commands).

Two steps, each a subcommand, as in ``official_corpus.py``:

``corpus``  writes, per benchmark, a JSONL file of (gold, prediction) rows. Deterministic (seeded
            generators), standard library only, importing nothing of localfin, so the corpus
            does not depend on the code it tests.
``score``   runs the released scorers on a corpus, from copies of the released repositories
            outside this repository, and writes the committed table: each row with the
            released verdicts added.

Benchmarks and where their golds and predictions come from:

``finmmr``   real model answers: FinMMR's own published evaluation results
             (``results/evaluate-results/FinMMR/<subset>/cot/<model>/evaluation.json`` of
             addictedLL/FinMMR): for sampled records, the answer FinMMR's extraction model read
             (``extracted``), the end of the model's own solution text (``solution_tail``: prose,
             ``\\boxed{}``, "Therefore, the answer is 1,779."), and one systematic variation of
             the extracted answer; the gold from the released data file of the same question.
``bizbench`` golds: the quantities of TAT-QA's released dev file (answers read off annual
             reports' tables: span answers that are one number, written as the report writes
             them, ``$1,496.5``, ``(1,234)``, ``12.5%``, and arithmetic answers), BizBench's own
             file not being available here; predictions: the forms a model writes (separators,
             currency, percent, magnitude words, rescaled values, prose, signs, rounding).
``finmme``   items in FinMME's released row format (single choice, multiple choice, numerical
             with a tolerance), their numbers taken from FinMMR's released gold; predictions:
             the replies a model writes (``Answer: B``, ``**Answer:** A, C``, ``\\boxed{}``,
             prose without ``Answer:``, numbers with units and separators, near misses).
``fintmm``   answers in FinTMMBench's styles (yes/no, companies of the shared S&P 500 list,
             amounts with currency, percentages, sentiments, trends, dates); predictions: case,
             punctuation, articles, extra words, a dropped unit, another number or company.
"""

from __future__ import annotations

import argparse
import csv
import importlib
import json
import random
import sys
import types
from collections.abc import Iterator
from pathlib import Path

SEED = 41
FINMMR_RECORDS_PER_FILE = 30
_FINMMR_TAIL_CHARS = 200


def _plain(x: float) -> str:
    if float(x).is_integer() and abs(x) < 1e16:
        return str(int(x))
    text = f"{x:.10f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def _commas(x: float) -> str:
    text = _plain(abs(x))
    decimals = len(text.split(".")[1]) if "." in text else 0
    return f"{x:,.{decimals}f}"


def _number_forms(v: float, rng: random.Random) -> list[str]:
    """Ways a model writes the number ``v`` (some right under a rule, some wrong)."""
    p = _plain(v)
    forms = [
        p,
        _commas(v),
        f"${_commas(v)}",
        f"{p}%",
        f"{p} million",
        f"${p} million",
        f"{_plain(v * 1000)}",
        f"{_commas(v * 1000)} thousand",
        f"{v:.2f}",
        f"{v:.1f}",
        f"{v:.0f}",
        f"{p}0" if "." in p else f"{p}.0",
        f"The answer is {p}.",
        f"Therefore, the answer is {_commas(v)}.",
        f"approximately {p}",
        f"\\boxed{{{p}}}",
        f"$\\boxed{{{_commas(v)}}}$",
        f"-{p}" if v >= 0 else p.lstrip("-"),
        f"({_commas(abs(v))})",
        f"{p} USD",
        f"USD {p}",
        f"{_plain(v * 1.004)}",
        f"{_plain(v * 1.0015)}",
        f"{_plain(v * 0.999)}",
        f"{p} (in millions)",
        f"{_plain(v / 1000)} billion",
        f"{v:e}",
        f" {p} ",
        f"{p} or {_plain(v * 2)}",
        f"{_plain(v)}, up from {_plain(v / 2)}",
        f"{_plain(v * 2)} / 2",
        f"{p}°",
        f"{p}k",
    ]
    rng.shuffle(forms)
    return forms


# --- FinMMR -------------------------------------------------------------------------------------
def _finmmr_gold(repo: Path) -> dict[str, object]:
    gold: dict[str, object] = {}
    for f in sorted((repo / "data").glob("*/*.json")):
        for rec in json.loads(f.read_text(encoding="utf-8")):
            gold[str(rec["question_id"])] = rec["ground_truth"]
    return gold


def _solution(output: object) -> str:
    if isinstance(output, list):
        output = next((o for o in reversed(output) if isinstance(o, str) and o.strip()), "")
    return str(output or "")


def finmmr_rows(repo: Path) -> Iterator[dict]:
    """Real answers from FinMMR's published CoT evaluations (module docstring)."""
    rng = random.Random(SEED)
    gold = _finmmr_gold(repo)
    files = sorted((repo / "results" / "evaluate-results" / "FinMMR").glob("*/cot/*/evaluation.json"))
    for f in files:
        try:
            records = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # a file the snapshot holds as a pointer only
        model, subset = f.parent.name, f.parent.parent.parent.name
        usable = [
            r for r in records if str(r.get("question_id")) in gold and isinstance(r.get("result"), dict)
        ]
        for rec in rng.sample(usable, min(FINMMR_RECORDS_PER_FILE, len(usable))):
            qid = str(rec["question_id"])
            extracted = rec["result"].get("extracted_answer")
            base = {"question_id": qid, "ground_truth": gold[qid], "subset": subset, "model": model}
            if isinstance(extracted, str):
                yield {
                    **base,
                    "kind": "extracted",
                    "prediction": extracted,
                    "published_acc": rec["result"]["acc"],
                }
            tail = _solution(rec.get("output")).strip()[-_FINMMR_TAIL_CHARS:]
            if tail:
                yield {**base, "kind": "solution_tail", "prediction": tail}
            try:
                value = float(str(extracted).replace(",", ""))
            except ValueError:
                value = float(gold[qid]) if not isinstance(gold[qid], bool) else 1.0
            yield {**base, "kind": "variation", "prediction": rng.choice(_number_forms(value, rng))}


# --- BizBench ---------------------------------------------------------------------------------
def _reads_as_one_number(text: str) -> bool:
    core = text.replace("$", "").replace(",", "").replace("%", "").strip().strip("()")
    try:
        float(core)
    except ValueError:
        return False
    return True


def bizbench_rows(tatqa: Path) -> Iterator[dict]:
    """Filing quantities of TAT-QA's dev file as golds, with the forms a model writes."""
    rng = random.Random(SEED + 1)
    golds: list[str] = []
    for doc in json.loads(tatqa.read_text(encoding="utf-8")):
        for q in doc["questions"]:
            if q["answer_type"] == "span" and _reads_as_one_number(str(q["answer"][0])):
                golds.append(str(q["answer"][0]))
            elif q["answer_type"] == "arithmetic":
                golds.append(_plain(round(float(q["answer"]), 2)))
    golds = list(dict.fromkeys(golds))
    for gold in rng.sample(golds, min(420, len(golds))):
        core = gold.replace("$", "").replace(",", "").replace("%", "").strip()
        value = -float(core.strip("()")) if core.startswith("(") else float(core)
        forms = [gold, *_number_forms(value, rng)[:3]]
        for prediction in dict.fromkeys(forms):
            yield {"gold": gold, "prediction": prediction}


# --- FinMME -----------------------------------------------------------------------------------
_LETTERS = "ABCDE"


def _choice_replies(answer: str, rng: random.Random) -> list[str]:
    letters = [c for c in answer if c.isalpha()]
    wrong = rng.choice([c for c in _LETTERS if c not in letters] or ["F"])
    joined = ", ".join(letters)
    return [
        f"Answer: {answer}",
        f"Answer: {joined}",
        f"Answer:{''.join(letters)}",
        f"**Answer:** {joined}",
        f"answer: {''.join(letters).lower()}",
        f"The answer is {joined}.",
        f"Answer: $\\boxed{{{''.join(letters)}}}$",
        f"\\boxed{{{letters[0]}}}",
        f"({letters[0]})",
        f"{joined}",
        f"Answer: {letters[0]}. The chart shows a clear rise.",
        f"Looking at the chart, option {wrong} fits best. Answer: {wrong}",
        f"Answer: {wrong}",
        f"Answer: {joined}, {wrong}",
        f"I think it is {letters[0]} because the bars rise.",
        "Answer:",
        f"Answer: Option {letters[0]}",
    ]


def _numeric_replies(answer: str, tol: float, rng: random.Random) -> list[str]:
    v = float(answer)
    p = _plain(v)
    step = tol if tol else 0.01
    return [
        f"Answer: {answer}",
        f"Answer: {p}",
        f"Answer: {_commas(v)}",
        f"Answer: {p}%",
        f"Answer: {p} million",
        f"**Answer:** {p}",
        f"Answer: $\\boxed{{{p}}}$",
        f"Answer: \\boxed{{{p}}}",
        f"The answer is {p}.",
        f"{p}",
        f"Answer: ${_commas(v)}",
        f"Answer: {_plain(v + step * 0.5)}",
        f"Answer: {_plain(v + step * 1.5)}",
        f"Answer: {_plain(-v)}",
        f"Answer: approximately {p}",
        f"Answer: {_plain(v * 100)}",
        f"Answer: {p}.",
        f"Answer: {p}-{_plain(v + 1)}",
    ]


def finmme_rows(finmmr_repo: Path) -> Iterator[dict]:
    """FinMME-shaped items (numbers from FinMMR's released gold) with model-like replies."""
    rng = random.Random(SEED + 2)
    numbers = [g for g in _finmmr_gold(finmmr_repo).values() if not isinstance(g, bool)]
    rng.shuffle(numbers)
    item_id = 0
    for i in range(150):
        item_id += 1
        kind = ("single_choice", "multiple_choice", "numerical")[i % 3]
        options = rng.choice(["A. up\nB. down\nC. flat\nD. mixed", "", None, "['10%', '20%', '30%', '40%']"])
        if kind == "single_choice":
            answer, tol, replies = rng.choice(_LETTERS[:4]), None, None
        elif kind == "multiple_choice":
            picked = sorted(rng.sample(_LETTERS[:4], rng.choice([2, 2, 3])))
            answer, tol = rng.choice([",".join(picked), "".join(picked), ", ".join(picked)]), None
        else:
            g = numbers[i]
            answer = (
                _plain(round(float(g), rng.choice([0, 1, 2]))) if rng.random() < 0.8 else _commas(float(g))
            )
            tol = rng.choice([0.0, 0.01, 0.1, 0.5, 1.0, 5.0, None])
            options = None
        if kind == "numerical":
            try:
                replies = _numeric_replies(answer.replace(",", ""), float(tol or 0.0), rng)
            except ValueError:
                continue
        else:
            replies = _choice_replies(answer, rng)
        row = {
            "id": 9000 + item_id,
            "question_type": kind,
            "answer": answer,
            "options": options,
            "unit": "%" if kind == "numerical" and i % 2 else "",
            "tolerance": tol,
        }
        for reply in rng.sample(replies, min(11, len(replies))):
            yield {**row, "reply": reply}


# --- FinTMMBench ------------------------------------------------------------------------------
def _companies(path: Path) -> list[tuple[str, str]]:
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    key = next(k for k in rows[0] if k.lower() in ("security", "name", "company"))
    sym = next(k for k in rows[0] if k.lower() in ("symbol", "ticker"))
    return [(r[key].strip(), r[sym].strip()) for r in rows if r.get(key) and r.get(sym)]


def fintmm_rows(companies_csv: Path) -> Iterator[dict]:
    """FinTMMBench-style answers with the variations a model writes."""
    rng = random.Random(SEED + 3)
    companies = _companies(companies_csv)
    rng.shuffle(companies)
    for i in range(330):
        name, ticker = companies[i % len(companies)]
        other = companies[(i + 7) % len(companies)][0]
        value = round(rng.uniform(1, 900), rng.choice([0, 2]))
        kind = i % 8
        if kind == 0:
            gold = rng.choice(["Yes", "No"])
            preds = [
                gold,
                gold.lower(),
                f"{gold}.",
                f"{gold}, it did.",
                "No" if gold == "Yes" else "Yes",
                f"**{gold}**",
            ]
        elif kind == 1:
            gold = name
            preds = [name, name.upper(), f"The {name}", ticker, other, f"{name} ({ticker})", f"{name}."]
        elif kind == 2:
            gold = f"{_plain(value)} USD"
            v = _plain(value)
            preds = [gold, v, f"${v}", f"{v} usd", f"{_plain(value + 0.01)} USD", f"USD {v}", f"{v}USD"]
            preds.append(f"about {v} USD")
        elif kind == 3:
            big = int(value * 1_000_000)
            gold = f"{big:,} EUR"
            preds = [
                gold,
                f"{big} EUR",
                f"{big:,}",
                f"{value} million EUR",
                f"{big:,} eur",
                f"{big + 1000:,} EUR",
            ]
        elif kind == 4:
            gold = f"{value}%"
            preds = [
                gold,
                f"{value} %",
                f"{value}",
                f"{value} percent",
                f"{round(value + 0.1, 2)}%",
                f"({value}%)",
            ]
        elif kind == 5:
            gold = rng.choice(["Positive", "Negative", "Neutral"])
            preds = [gold, gold.lower(), f"The sentiment is {gold.lower()}", "Positive", "Mixed", f"{gold}."]
        elif kind == 6:
            gold = rng.choice(["Increasing", "Decreasing", "Stable"])
            preds = [
                gold,
                f"{gold.lower()} trend",
                f"An {gold.lower()} trend",
                "Increasing",
                f"It was {gold.lower()}",
            ]
        else:
            gold = f"{name}'s revenue rose by {value}% from 2023-03-31 to 2023-06-30."
            preds = [
                gold,
                gold.lower(),
                gold.rstrip("."),
                f"Revenue rose by {value}%.",
                f"The {gold}",
                gold.replace("rose", "fell"),
            ]
        for pred in dict.fromkeys(preds):
            yield {"uuid": f"tmm-{i}", "gold": gold, "prediction": pred}


# --- scoring with the released code ------------------------------------------------------------
def _finacumen(checkout: Path) -> tuple[types.ModuleType, types.ModuleType]:
    """The FinAcumen authors' harness rule (``ft/variant/base.py``) and their dataset adapter."""
    sys.path.insert(0, str(checkout))
    base = importlib.import_module("finacumen.ft.variant.base")
    adapters = importlib.import_module("finacumen.ft.dataset.adapters")
    return base, adapters


def score_finmmr(rows: list[dict], checkouts: dict[str, Path]) -> Iterator[dict]:
    stand_in = types.ModuleType("utils.llm")
    stand_in.LLM = type("LLM", (), {})  # get_acc needs nothing of the API client
    sys.modules["utils.llm"] = stand_in
    sys.path.insert(0, str(checkouts["finmmr"] / "evaluate"))
    utils = importlib.import_module("utils.evaluation_utils")
    base, adapters = _finacumen(checkouts["finacumen"])
    targets = {}
    for f in sorted((checkouts["finmmr"] / "data").glob("*/*.json")):
        difficulty = f.stem.split("_")[0]
        for t in adapters.load_finmmr(f, difficulty):
            targets[t["id"]] = t
    for row in rows:
        pred = row["prediction"]
        acc = int(utils.get_acc(pred, row["ground_truth"]))
        valid = bool(pred) and "none" not in pred.lower()  # eval_cot's check before get_acc
        authors = bool(base._score_native(targets[row["question_id"]], pred))
        yield {**row, "official_get_acc": acc, "official_cot_acc": acc if valid else 0, "authors": authors}


def score_bizbench(rows: list[dict], checkouts: dict[str, Path], work: Path) -> Iterator[dict]:
    base, adapters = _finacumen(checkouts["finacumen"])
    golds = list(dict.fromkeys(r["gold"] for r in rows))
    f = work / "bizbench_test.json"
    f.write_text(
        json.dumps([{"question": "q", "answer": g, "context": "c"} for g in golds]), encoding="utf-8"
    )
    targets = dict(zip(golds, adapters.load_bizbench(f)))
    for row in rows:
        yield {**row, "authors": bool(base._score_native(targets[row["gold"]], row["prediction"]))}


def score_finmme(rows: list[dict], checkouts: dict[str, Path], work: Path) -> Iterator[dict]:
    for name in ("datasets",):  # eval.py imports it for its hub loader, which scoring does not use
        if name not in sys.modules:
            stub = types.ModuleType(name)
            stub.load_dataset = None
            sys.modules[name] = stub
    sys.path.insert(0, str(checkouts["finmme"]))
    official = importlib.import_module("eval")
    base, adapters = _finacumen(checkouts["finacumen"])
    items: dict[int, dict] = {}
    for r in rows:
        items.setdefault(r["id"], {k: v for k, v in r.items() if k != "reply"})
    f = work / "finmme_test.json"
    f.write_text(json.dumps([{**it, "question_text": "q"} for it in items.values()]), encoding="utf-8")
    targets = {t["id"]: t for t in adapters.load_finmme(f)}
    for row in rows:
        item = {k: v for k, v in row.items() if k != "reply"}
        ok, _ = official.check_answer(item, row["reply"])
        authors = bool(base._score_native(targets[f"finmme-{row['id']}"], row["reply"]))
        yield {**row, "official": bool(ok), "authors": authors}


def score_fintmm(rows: list[dict], checkouts: dict[str, Path], work: Path) -> Iterator[dict]:
    base, adapters = _finacumen(checkouts["finacumen"])
    records = {r["uuid"]: r["gold"] for r in rows}
    f = work / "QA.json"
    qa = [
        {"uuid": u, "question": "q", "type": "News", "answers": [{"answer": g, "source": []}]}
        for u, g in records.items()
    ]
    f.write_text(json.dumps(qa), encoding="utf-8")
    targets = {t["id"]: t for t in adapters.load_fintmm(f)}
    for row in rows:
        yield {**row, "authors": bool(base._score_native(targets[row["uuid"]], row["prediction"]))}


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
    c.add_argument("benchmark", choices=["finmmr", "bizbench", "finmme", "fintmm"])
    c.add_argument(
        "source", type=Path, help="FinMMR repository (finmmr, finmme), TAT-QA dev file, companies CSV"
    )
    c.add_argument("out", type=Path)
    s = sub.add_parser("score", help="score a corpus with the released scorers")
    s.add_argument("benchmark", choices=["finmmr", "bizbench", "finmme", "fintmm"])
    s.add_argument("--finacumen", type=Path, required=True, help="the FinAcumen authors' repository copy")
    s.add_argument("--finmmr", type=Path, help="FinMMR's repository copy (finmmr)")
    s.add_argument("--finmme", type=Path, help="FinMME's repository copy (finmme)")
    s.add_argument("--work", type=Path, required=True, help="a scratch folder outside this repository")
    s.add_argument("corpus", type=Path)
    s.add_argument("out", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "corpus":
        make = {
            "finmmr": finmmr_rows,
            "bizbench": bizbench_rows,
            "finmme": finmme_rows,
            "fintmm": fintmm_rows,
        }
        n = _write(args.out, make[args.benchmark](args.source))
    else:
        rows = [json.loads(line) for line in args.corpus.read_text(encoding="utf-8").splitlines()]
        checkouts = {
            k: v
            for k, v in (("finacumen", args.finacumen), ("finmmr", args.finmmr), ("finmme", args.finmme))
            if v
        }
        args.work.mkdir(parents=True, exist_ok=True)
        if args.benchmark == "finmmr":
            out = score_finmmr(rows, checkouts)
        else:
            out = {"bizbench": score_bizbench, "finmme": score_finmme, "fintmm": score_fintmm}[
                args.benchmark
            ](rows, checkouts, args.work)
        n = _write(args.out, out)
    print(f"{args.out}: {n} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
