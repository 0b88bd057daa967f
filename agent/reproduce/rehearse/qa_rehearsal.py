"""A FinAcumen config's rehearsal: its own datasets through every stage of the real run.

The config's plan runs as shipped (model, judge, variants, tools, tau, k_max, the solver's
limits, the Base protocol) on the tiny stand-ins, with items, tool steps and trajectories shrunk
(:class:`~agent.reproduce.rehearse.runs.RehearsalSize`) and bank-size snapshots mapped to 0/2/4
entries. Its data are the config's own benchmarks in their released layouts
(:mod:`agent.reproduce.rehearse.qa_data`: released files where the data root holds them, the
same records re-filed for parts it lacks, stand-ins written in the layout where it holds
nothing), read by the same loaders, scored by the same scorers and judge, through the same bank
build, evaluations, judge passes, judge check, analytics and ``reproduction.md``
(:func:`agent.reproduce.qa_arms.run_qa`, :func:`agent.reproduce.report.write_report`).

The stage table says, per dataset (each bank source and each evaluation set), which file it
read, how many items each stage took and which scorer graded them; a stage a dataset should go
through and did not (nothing loaded, no trajectory scored, no entry added, a variant not scored,
no judge pass or judge check on a judged set, no FinMME Avg, no analytics row, no report row)
is a failed check, and so is a run that stops (a scorer that cannot run stops it before any
model call). :func:`qa_sizes` sizes the largest first prompt of the real items the data root
holds against the context.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent.reproduce.rehearse.checks import Check
from agent.reproduce.rehearse.qa_data import RehearsalData, rehearsal_data
from agent.reproduce.spec import QAPlan, ReproConfig
from localfin.errors import LocalfinError

__all__ = ["rehearsal_qa_plan", "run_qa_rehearsal", "stage_checks", "stage_markdown", "qa_sizes"]

log = logging.getLogger(__name__)

#: bank-size snapshots of a rehearsal (the grid's points, on a bank of a few entries)
REHEARSAL_BANK_SIZES = (0, 2, 4)


def rehearsal_qa_plan(
    cfg: ReproConfig, out: Path, size: Any, data_root: Path | None
) -> tuple[QAPlan, RehearsalData]:
    """The config's plan on its rehearsal data (module docstring), and that data."""
    assert cfg.qa is not None
    data = rehearsal_data(cfg.qa, data_root, out, items=max(size.qa_items, size.bank_items) + 1)
    return rehearsal_shrink(out, size, data)(cfg.qa), data


def rehearsal_shrink(out: Path, size: Any, data: RehearsalData) -> Callable[[QAPlan], QAPlan]:
    """Shrinks a plan of the config (or of one of its arms) onto the rehearsal ``data``: the
    sources moved there and limited, tool steps, trajectories and bank sizes shrunk, a small
    market store for a plan whose tools have ``lookup``."""
    from agent.reproduce.run import _smoke_store

    where = data.root / "benchmarks"

    def moved(s: Any, limit: int) -> Any:
        return replace(s, path=str(where / s.path), limit=limit)

    def shrink(plan: QAPlan) -> QAPlan:
        store = _smoke_store(out) if "lookup" in plan.tools else None
        return replace(
            plan,
            bank=tuple(moved(s, size.bank_items) for s in plan.bank),
            sets=tuple(moved(s, size.qa_items) for s in plan.sets),
            max_steps=size.qa_steps,
            bank_k=size.bank_k,
            bank_sizes=REHEARSAL_BANK_SIZES if plan.bank_sizes else (),
            store=str(store or ""),
            judge_check_items=min(plan.judge_check_items, size.qa_items + 1) if plan.judge_check_items else 0,
            base_max_tokens=size.qa_base_tokens or plan.base_max_tokens,
            corpus=str(where / plan.corpus) if plan.corpus else "",
        )

    return shrink


def run_qa_rehearsal(
    cfg: ReproConfig, out: Path, backend: Any, registry: Any, *, size: Any, data_root: Path | None
) -> dict[str, Any]:
    """Run ``cfg``'s rehearsal into ``out``; returns the plan, its data, the outcome (None when
    the run stopped), the error that stopped it and the stage table."""
    from agent.reproduce.qa_arms import run_qa
    from agent.reproduce.report import write_report

    plan, data = rehearsal_qa_plan(cfg, out, size, data_root)
    outcome, error = None, ""
    try:
        shrink = rehearsal_shrink(out, size, data)
        outcome = run_qa(cfg, out, backend=backend, registry=registry, data_root=data.root, shrink=shrink)
        extra = {"qa_details": outcome.details} if outcome.details else {}
        write_report(cfg, out, outcome.rows, mode="rehearsal", notes=outcome.notes, extra=extra,
                     tables=outcome.tables, reads_gold=outcome.reads_gold)  # fmt: skip
    except LocalfinError as exc:
        error = f"{type(exc).__name__}: {exc}"
        log.warning("rehearsal of %s stopped: %s", cfg.name, error)
    stages = stage_table(plan, data, outcome, out)
    gold = list(outcome.reads_gold) if outcome is not None else []
    return {"plan": plan, "data": data, "outcome": outcome, "error": error, "stages": stages, "notes": gold}


# --------------------------------------------------------------------------- stages
def _report_rows(out: Path) -> list[dict[str, Any]]:
    f = out / "reproduction.json"
    return list(json.loads(f.read_text(encoding="utf-8")).get("rows", [])) if f.is_file() else []


def stage_table(plan: QAPlan, data: RehearsalData, outcome: Any, out: Path) -> list[dict[str, Any]]:
    """One row per dataset of the plan: its file and what each stage did with it."""
    d: Mapping[str, Any] = outcome.details if outcome is not None else {}
    loaded = {r["label"]: r for part in ("sets", "bank") for r in d.get("data", {}).get(part, [])}
    bank = d.get("bank", {}).get("by_source", {})
    rows_out = _report_rows(out)
    table = []
    for role, sources in (("bank", plan.bank if plan.needs_bank else ()), ("set", plan.sets)):
        for s in sources:
            f = data.files.get(s.label)
            rec = loaded.get(s.label, {})
            row: dict[str, Any] = {
                "dataset": s.label,
                "role": role,
                "benchmark": s.dataset,
                "file": f.kind if f else "-",
                "path": f.file if f else "-",
                "loaded": rec.get("items", 0),
                "scorer": _scorer_label(plan, s.dataset),
            }
            if role == "bank":
                b = bank.get(rec.get("source_set", ""), {})
                row.update(
                    bank_items=b.get("run", 0) + b.get("in_bank_before", 0),
                    trajectories_scored=b.get("trajectories", 0),
                    scored_by=b.get("scored_by", ""),
                    entries=b.get("added", 0),
                )
                if plan.bank_grading == "authors":
                    row["no_terminated"] = b.get("no_terminated", 0)
            else:
                runs_of = {k: v for k, v in d.get("scoring", {}).items() if v["set"] == s.label}
                for v in plan.variants:
                    n = sum(x["n"] for k, x in runs_of.items() if _variant_of(k) == v)
                    row[f"scored_{v}"] = n
                row["scored_by"] = ", ".join(sorted({x["scorer"] for x in runs_of.values()}))
                if plan.scorer_of(s.dataset).judge_prompt:
                    row["judged"] = sum(j["n"] for k, j in d.get("judge", {}).items() if k in runs_of)
                    row["judge_checked"] = d.get("judge_check", {}).get(s.label, {}).get("n", 0)
                if s.dataset == "finmme":
                    row["finmme_avg_runs"] = sum(1 for k in d.get("finmme", {}) if k in runs_of)
                if plan.taus:
                    row["analytics_rows"] = sum(1 for r in rows_out if r.get("set") == s.label and "tau" in r)
                row["report_rows"] = sum(1 for r in rows_out if r.get("set") == s.label and "variant" in r)
            row["note"] = f.note if f else ""
            table.append(row)
    return table


def _variant_of(run_name: str) -> str:
    if "-ft_fm" in run_name:
        return "ft_fm"
    return "base" if run_name.endswith("-base") else "ft" if run_name.endswith("-ft") else "?"


def _scorer_label(plan: QAPlan, dataset: str) -> str:
    spec = plan.scorer_of(dataset)
    judge = f"judge {plan.judge}"
    if spec.judge_prompt:
        return judge if spec.name == "localfin" else f"{spec.name}: {spec.label}, {judge}"
    if spec.extract:
        return f"{spec.name}: {spec.label}, extractor {plan.extractor}"
    return f"{spec.name}: {spec.label}"


def _missing(plan: QAPlan, row: Mapping[str, Any]) -> list[str]:
    """The stages ``row``'s dataset should have gone through and did not."""
    bad = []
    if not row["loaded"]:
        bad.append("loader (no item)")
    if row["role"] == "bank":
        if not row.get("trajectories_scored"):
            bad.append("bank build scoring (no trajectory scored)")
        if not row.get("entries") and not _dropped_by_their_rule(plan, row):
            bad.append("bank entries (none added)")
        return bad
    for v in plan.variants:
        if not row.get(f"scored_{v}"):
            bad.append(f"evaluation {v} (nothing scored)")
    if plan.scorer_of(row["benchmark"]).judge_prompt:
        if not row.get("judged"):
            bad.append("judge pass (nothing judged)")
        if plan.judge_check_items and not row.get("judge_checked"):
            bad.append("judge check (nothing checked)")
    if row["benchmark"] == "finmme" and plan.variants and not row.get("finmme_avg_runs"):
        bad.append("FinMME Avg (not computed)")
    if plan.taus and not row.get("analytics_rows"):
        bad.append("analytics (no H/E/J/C row)")
    if plan.variants and not row.get("report_rows"):
        bad.append("reproduction.md (no row)")
    return bad


def _dropped_by_their_rule(plan: QAPlan, row: Mapping[str, Any]) -> bool:
    """Under the authors' bank grading, every item run had no trajectory that terminated with an
    answer, so their rule dropped each before any grading or summary call (random stand-ins call
    no tool, so none terminates): no entry is the rule's outcome, not a stage that failed."""
    run = row.get("bank_items", 0)
    return plan.bank_grading == "authors" and bool(run) and row.get("no_terminated", 0) == run


def stage_checks(path: str, ran: Mapping[str, Any]) -> list[Check]:
    """A failed check for a run that stopped and for every dataset with a stage not exercised."""
    plan: QAPlan = ran["plan"]
    out = []
    if ran.get("error"):
        out.append(Check(path, "run", "stages", False, f"the run stopped: {ran['error'][:400]}"))
    for row in ran["stages"]:
        bad = _missing(plan, row)
        said = ", ".join(f"{k} {v}" for k, v in row.items() if k not in ("dataset", "path", "note", "role"))
        detail = f"not exercised: {'; '.join(bad)}" if bad else said
        ok: bool | None = not bad
        if not bad and row["role"] == "bank" and not row.get("entries"):
            # neither passed nor failed: the grading, summary and entry stages were not reached
            ok = None
            detail = (
                "no entry: no trajectory terminated with an answer, so the authors' rule dropped every "
                f"item before grading and summary (random stand-ins call no tool); {said}"
            )
        out.append(Check(path, f"dataset {row['dataset']}", f"stages ({row['role']})", ok, detail, dict(row)))
    return out


def stage_markdown(
    stages_by_path: Mapping[str, Sequence[Mapping[str, Any]]], cuts: Mapping[str, Any]
) -> list[str]:
    """The report's section: per path, the datasets through the stages; then the cuts."""
    lines: list[str] = []
    for path, rows in stages_by_path.items():
        if not rows:
            continue
        cols: list[str] = []
        for r in rows:
            cols += [k for k in r if k not in cols and k != "path"]
        lines += ["", f"Datasets through the stages ({path}):", ""]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(r.get(c, "-")).replace("|", "/") for c in cols) + " |" for r in rows]
        files = sorted({(r["dataset"], r["path"]) for r in rows})
        lines += ["", "Files read:", ""] + [f"- {name}: `{f}`" for name, f in files]
    for path, by_call in cuts.items():
        if not by_call:
            continue
        from agent.qa.core.trajectory import CUTS

        lines += ["", f"What the solver's limits cut, per call type ({path}):", ""]
        lines += ["| call type | " + " | ".join(CUTS) + " |", "|" + "---|" * (len(CUTS) + 1)]
        lines += [f"| {k} | " + " | ".join(str(v.get(c, 0)) for c in CUTS) + " |" for k, v in by_call.items()]
    return lines


# --------------------------------------------------------------------------- prompt sizes
def qa_sizes(
    cfg: ReproConfig, records: Sequence[Mapping[str, Any]], registry: Any, data_root: Path | None
) -> tuple[list[Any], list[str]]:
    """Per QA call type: the largest first prompt of the real items the data root holds for the
    config's sources (every item of each such source), against the context with the call's
    budget; the other call types as the rehearsal saw them."""
    from agent.qa.data.datasets import load_items
    from agent.qa.solver.solver_config import SolverConfig
    from agent.reproduce.rehearse.sizes import _counter, _image_sizes, _size

    assert cfg.qa is not None
    plan = cfg.qa
    spec = registry.get(plan.model)
    counter = _counter(plan.model, registry)
    budgets: dict[str, int] = {}
    for r in records:
        q = r["request"]
        budgets[q["call_type"]] = max(budgets.get(q["call_type"], 0), int(q["max_tokens"]))
    sc = SolverConfig(model=plan.model)
    items: list[Any] = []
    notes: list[str] = []
    seen: set[tuple[str, str, str | None, str | None]] = set()
    absent: list[str] = []
    for s in [*(plan.bank if plan.needs_bank else ()), *plan.sets]:
        path = s.resolve(data_root) if data_root is not None else None
        if path is None or not path.exists():
            absent.append(s.label)
            continue
        key = (s.dataset, str(path), s.subset, None if s.test_share else s.split)
        if key in seen:
            continue
        seen.add(key)
        try:
            got = list(load_items(s.dataset, path, split=key[3], subset=s.subset).items)
        except LocalfinError as exc:  # the data root holds the benchmark, not this part of it
            absent.append(f"{s.label} ({str(exc).split(' (')[0][:100]})")
            continue
        items += got
        notes.append(f"{s.label}: {len(got)} real items sized ({path})")
    if absent:
        notes.append(f"not on this machine, not sized: {', '.join(absent)}")
    out: list[Any] = []
    if items:

        def first(it: Any) -> tuple[int, int, str]:
            q = it.question
            text = json.dumps(
                {"question": q.text, "options": list(q.options), "context": q.context}, ensure_ascii=False
            )
            return len(text), _image_sizes([str(p) for p in q.images][:4]), text

        sized = [first(it) for it in items]
        chars, img, text = max(sized, key=lambda x: -(-x[0] // 3) + x[1])
        template = 4000  # the qa_solve / qa_step system prompt and tool schemas, a generous bound
        for call, label in (
            ("qa_solve", "qa_solve (first call, real items)"),
            ("qa_base", "qa_base (real items)"),
        ):
            if call in budgets:
                out.append(
                    _size(cfg.name, label, f"largest real item: {chars} chars + {template} template bound, "
                          f"{img} image tokens", chars + template, text + "x" * template, img, spec,
                          budgets[call], counter)
                )  # fmt: skip
        if "qa_solve" in budgets:
            cap, img_max = sc.max_prompt_chars, max(x[1] for x in sized)
            out.append(
                _size(cfg.name, "qa_solve (later steps, bound)", f"max_prompt_chars {cap} (the loop elides "
                      f"beyond it) + the largest real item's images ({img_max} tokens)", cap, None, img_max,
                      spec, budgets["qa_solve"], counter)
            )  # fmt: skip
    for r in records:
        q = r["request"]
        if q["call_type"] in ("qa_solve", "qa_base") and items:
            continue
        text = "\n".join(m.get("content") or "" for m in q["messages"])
        key = f"{q['call_type']} (rehearsal items)"
        if not any(x.call_type == key and x.chars >= len(text) for x in out):
            out = [x for x in out if x.call_type != key]
            out.append(
                _size(cfg.name, key, "observed in the rehearsal", len(text), text, 0, spec,
                      int(q["max_tokens"]), counter)
            )  # fmt: skip
    return out, notes
