"""What `localfin pairs run --check` and `--dry-run` print: the pre-flight's checks, one line each
with the verdict last, and the plan of an experiment (its folder, engines, windows and runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["check_lines", "plan_lines"]


def check_lines(checks: Any) -> list[str]:
    """One line per check (``OK`` or ``FAILED``, what, the detail), then the verdict."""
    lines = [f"{'OK     ' if c.ok else 'FAILED '} {c.what}: {c.detail}" for c in checks]
    failed = sum(not c.ok for c in checks)
    if failed:
        lines.append(f"{len(checks)} checks, {failed} failed: the run would not start")
    else:
        lines.append(f"{len(checks)} checks, all passed: the run can start")
    return lines


def _folder_state(folder: Path, resume: bool) -> str:
    if not folder.exists():
        return "a new folder"
    if not any(folder.iterdir()):
        return "an empty folder"
    if (folder / "journal.sqlite").is_file():
        return "resumed (its journal's calls replay)" if resume else "exists: add --resume to continue it"
    return "exists and holds no experiment journal"


def plan_lines(cfg: Any, folder: Path, *, resume: bool = False) -> list[str]:
    """The experiment ``cfg`` would run into ``folder``: engines, windows, agent and baseline runs."""
    from agent.pairs.baselines.config import baseline_run_id
    from agent.pairs.experiment.baselines import rule_plan

    m = cfg.model
    where = f"openai server {m.base_url}" if m.backend == "openai" else f"{m.backend} in-process"
    engines = [f"{m.backbone} ({where})"]
    fm = cfg.finmem_backend_spec()
    if fm is not None:
        engines.append(f"{fm.model} (FinMem's)")
    w = cfg.windows
    agent = [rid for rid, *_ in cfg.run_ids()]
    baselines = [rid for *_, rid in rule_plan(cfg)]
    if "finmem" in cfg.baselines.methods:
        baselines += [baseline_run_id("finmem", e, s) for e in cfg.exposures for s in cfg.seeds]
    return [
        f"experiment {cfg.name} into {folder} ({_folder_state(folder, resume)})",
        f"engines: {'; '.join(engines)}",
        f"train {w.train_start} .. {w.train_end}, test {w.test_start} .. {w.test_end}, "
        f"validation cycle {cfg.lifecycle.validation_period} sessions",
        f"{len(agent)} agent runs: {', '.join(agent)}",
        f"{len(baselines)} baseline runs: {', '.join(baselines) or 'none'}",
    ]
