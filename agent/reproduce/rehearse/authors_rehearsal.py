"""A FinAcumen rehearsal's check of the authors' texts: where a plan (or an arm) sends the authors'
prompts, the first request of each of its run folders (each evaluation's variant, the bank build)
must carry, as its system message, the authors' system prompt of that variant as read from their
checkout (Base: their Base prompt; Base+FT and the bank's trajectories: FT-only's; Base+FT+FM:
FinAcumen's); and the texts of theirs each run read, with their file, lines and digest
(``authors_code.json`` in each run's folder), for ``rehearsal.md``."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from agent.reproduce.rehearse.checks import Check
from serving.journal import Journal

__all__ = ["authors_checks", "authors_texts", "authors_markdown"]


def _variant(run: Path) -> str:
    manifest = run / "manifest.json"
    if manifest.is_file():
        doc = json.loads(manifest.read_text(encoding="utf-8"))
        if doc.get("kind") == "bank_build":
            return "bank"
        v = (doc.get("extra") or {}).get("variant") or doc.get("variant")
        if v:
            return str(v)
    if run.name == "bank_build":
        return "bank"
    return "ft_fm" if "-ft_fm" in run.name else run.name.rsplit("-", 1)[-1]


def _first_request(run: Path) -> Mapping[str, Any] | None:
    f = run / "journal.sqlite"
    if not f.is_file():
        return None
    with Journal(f) as j:
        recs = [r for r in j.records() if r["request"].get("call_type") in ("qa_solve", "qa_base")]
    return recs[0]["request"] if recs else None


def _plans(cfg: Any, where: Path) -> Iterable[tuple[Any, Path]]:
    """(plan, its folder) of the config and of each of its arms."""
    arms = list(cfg.qa_arms())
    for arm, plan in arms:
        yield plan, (where / "arms" / arm.name if arm is not None else where)


def authors_checks(path: str, cfg: Any, where: Path) -> list[Check]:
    """One check per run folder of a plan that sends the authors' prompts (module docstring)."""
    from agent.qa.authors.checkout import open_authors_code
    from agent.qa.authors.messages import system_prompt

    out: list[Check] = []
    for plan, folder in _plans(cfg, where):
        if plan.loop != "authors" and plan.base != "authors":
            continue
        code = open_authors_code(plan.authors_code, verify=plan.authors_code_verify)
        want = {
            "base": ("base.system", code.text("base.system")) if plan.base == "authors" else None,
            "ft": ("ft_only.system", system_prompt(code, "ft_only")) if plan.loop == "authors" else None,
            "bank": ("ft_only.system", system_prompt(code, "ft_only")) if plan.loop == "authors" else None,
            "ft_fm": ("finacumen.system", system_prompt(code, "finacumen"))
            if plan.loop == "authors"
            else None,
        }
        runs = (
            sorted(p.parent for p in (folder / "runs").rglob("journal.sqlite"))
            if (folder / "runs").is_dir()
            else []
        )
        seen: set[str] = set()
        for run in runs:
            v = _variant(run)
            expect = want.get(v)
            if expect is None:
                continue
            first = _first_request(run)
            msgs = first.get("messages", []) if first else []
            ok = bool(msgs) and msgs[0].get("role") == "system" and msgs[0].get("content") == expect[1]
            seen.add(v)
            out.append(
                Check(
                    path, "qa_base" if v == "base" else "qa_solve", "authors' prompt", ok,
                    f"{run.relative_to(where)}: the first request's system message "
                    + ("is" if ok else "is NOT") + f" the authors' {expect[0]}",
                    {"variant": v, "run": run.name},
                )
            )  # fmt: skip
        missing = [v for v in ("base", "ft", "ft_fm") if v in plan.variants and want.get(v) and v not in seen]
        if missing:
            out.append(
                Check(path, "qa_solve", "authors' prompt", False, f"no run folder of {', '.join(missing)}")
            )
    return out


def authors_texts(where: Path) -> list[dict[str, Any]]:
    """The authors' texts the runs under ``where`` read (from their ``authors_code.json``), once each."""
    rows: dict[str, dict[str, Any]] = {}
    for f in sorted(where.rglob("authors_code.json")):
        doc = json.loads(f.read_text(encoding="utf-8"))
        for r in doc.get("texts", []):
            rows.setdefault(r["name"], r)
    return list(rows.values())


def authors_markdown(texts_by_path: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """``rehearsal.md``'s section listing the authors' texts read, per path."""
    lines: list[str] = []
    for path, rows in texts_by_path.items():
        if not rows:
            continue
        lines += ["", f"The authors' texts read from their checkout and sent ({path}):", ""]
        lines += ["| text | file:lines | sha256 (16) | pinned commit |", "|---|---|---|---|"]
        lines += [
            f"| {r['name']} | {r['file']} | {r['sha256']} | {'yes' if r['pinned'] else 'NO'} |" for r in rows
        ]
    return lines
