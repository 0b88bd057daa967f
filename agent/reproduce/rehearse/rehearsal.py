"""``localfin reproduce rehearse CONFIG|all``: every shipped config at its GPU settings on the
CPU, through the in-process engine and through ``vllm serve`` on loopback, with tiny random
stand-ins of its backbones (:mod:`agent.reproduce.rehearse.standins`), windows and items shrunk
(:mod:`agent.reproduce.rehearse.runs`); then the checks (:mod:`agent.reproduce.rehearse.checks`)
and the real-data prompt sizes (:mod:`agent.reproduce.rehearse.sizes`), written to
``OUT/rehearsal.md`` and ``OUT/rehearsal.json``. Engines and servers: one per architecture of
all the configs together, each with a 1 GiB KV cache, started once per path and stopped
before the next path.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from agent.reproduce.rehearse.checks import Check, check_calls, journal_records, probe_calls
from agent.reproduce.rehearse.runs import RehearsalSize, run_config
from agent.reproduce.rehearse.sizes import PromptSize, moira_sizes
from agent.reproduce.rehearse.standins import (
    Servers,
    StandInRouter,
    StandIns,
    check_reuse,
    engine_groups,
    open_engines,
    server_client,
    stand_ins,
    start_servers,
)
from agent.reproduce.spec import ReproConfig
from localfin.progress import NULL_PROGRESS, Progress
from serving.backend import Backend
from serving.registry import ModelSpec, Registry

__all__ = ["PATHS", "Rehearsal", "Running", "RunningServer", "rehearse", "write_rehearsal"]

log = logging.getLogger(__name__)
PATHS = ("engine", "server")


@dataclass
class Rehearsal:
    """Everything a rehearsal found, per config."""

    checks: list[Check] = field(default_factory=list)
    sizes: list[PromptSize] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    wall_s: dict[str, float] = field(default_factory=dict)
    calls_per_step: dict[str, dict[str, float]] = field(default_factory=dict)
    #: FinAcumen: per path, each dataset through the stages, and what the limits cut per call type
    qa_stages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    qa_cuts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    #: FinAcumen under the authors' protocol: per path, the authors' texts read (name, file, digest)
    authors_texts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    @property
    def too_long(self) -> list[PromptSize]:
        return [s for s in self.sizes if not s.fits]


def _decision_steps(doc: dict[str, Any]) -> dict[str, int]:
    """Decision steps per backbone registry key of a (shrunk) matrix document, counted as the
    plan counts them (:func:`agent.reproduce.workload.moira_work`) on the store's calendar.
    ``doc`` already holds the baselines that ran."""
    from agent.data.store import MarketStore
    from agent.reproduce.workload import moira_work

    def sessions(cell: Any) -> tuple[int, int]:
        w = cell[0].windows
        with MarketStore(cell[0].store, create=False) as s:
            cal = [str(d)[:10] for d in s.calendar()]
        train = sum(1 for d in cal if str(w.train_start) <= d <= str(w.train_end))
        test = sum(1 for d in cal if str(w.test_start) <= d <= str(w.test_end))
        return train, test

    methods = tuple((doc.get("baselines") or {}).get("methods", ()))
    work = moira_work(doc, methods, sessions)
    keys = {
        (b if isinstance(b, str) else b.get("name", b["key"])): (b if isinstance(b, str) else b["key"])
        for b in doc.get("backbones", [])
    }
    out: dict[str, int] = {}
    for name, w in work.items():
        out[keys[name]] = out.get(keys[name], 0) + w.steps
    return out


def _one_config(
    cfg: ReproConfig,
    si: StandIns,
    backends: dict[str, Any],
    path: str,
    out: Path,
    r: Rehearsal,
    shared: Path,
    size: RehearsalSize,
    data_root: Path | None = None,
) -> None:
    router = StandInRouter(si, backends, rekey=path == "engine")
    where = out / cfg.name / path
    t0 = time.perf_counter()
    ran = run_config(cfg, where, router, si.registry, size=size, data_root=data_root)
    r.wall_s[path] = round(time.perf_counter() - t0, 1)
    recs = journal_records(where)
    # Moira: the settings as the rehearsal ran them (its document: a config decoding as the
    # paper does runs on smaller budgets, moira_rehearsal.FREE_REPLY_TOKENS)
    ran_cfg = replace(cfg, document=ran["document"]) if "document" in ran else cfg
    r.checks += check_calls(ran_cfg, path, recs, si.registry)
    r.checks += probe_calls(path, recs, router, si.registry)
    r.checks += list(ran.get("checks", ()))  # Moira: every stage of its data path ran
    if cfg.kind == "qa":
        from agent.qa.analysis.cuts import cuts_by_call_type
        from agent.reproduce.rehearse.qa_rehearsal import stage_checks

        r.checks += stage_checks(path, ran)
        r.qa_stages[path] = list(ran["stages"])
        r.qa_cuts[path] = cuts_by_call_type([where / "runs"])
        if not ran.get("error"):
            from agent.reproduce.rehearse.authors_rehearsal import authors_checks, authors_texts

            r.checks += authors_checks(path, replace(cfg, qa=ran["plan"]), where)
            r.authors_texts[path] = authors_texts(where)
    if not r.sizes:  # on the first path the config runs (the prompts are the same on both)
        r.notes += list(ran.get("notes", ()))
        if cfg.kind == "moira":
            sizes, notes = moira_sizes(cfg, recs, si.real, shared)
        else:
            from agent.reproduce.rehearse.qa_rehearsal import qa_sizes

            sizes, notes = qa_sizes(cfg, recs, si.real, data_root)
        r.sizes += sizes
        r.notes += notes
        if cfg.kind == "moira":
            steps = _decision_steps(ran["document"])
            by: dict[str, int] = {}
            for x in recs:
                by[x["request"]["model"]] = by.get(x["request"]["model"], 0) + 1
            r.calls_per_step = {k: round(v / steps[k], 3) for k, v in by.items() if steps.get(k)}
    log.info("rehearsal %s (%s): %d calls in %.0f s", cfg.name, path, len(recs), r.wall_s[path])


class _Backends:
    """The backends of one path, per architecture: a running one as given (``running``), else
    the stand-in's own engine (``engine``) or ``vllm serve`` (``server``), started when a config
    first needs it and stopped once no later config does, so at most one config's architectures
    hold memory at a time."""

    def __init__(self, si: StandIns, path: str, out: Path, running: Running, reused: set[str]) -> None:
        self.si, self.path, self.out, self.running, self.reused = si, path, out, running, reused
        self.live: dict[str, Backend] = {}
        self.servers: dict[str, Servers] = {}

    def get(self, archs: set[str]) -> dict[str, Backend]:
        for a in sorted(archs - set(self.live)):
            if a in self.reused and self.path == "engine":
                self.live[a] = self.running.engines[a]
            elif a in self.reused:
                rs = self.running.servers[a]
                self.live[a] = server_client(
                    self.si, a, rs.base_url, api_key=rs.api_key, served_model_name=rs.served_model_name
                )
            elif self.path == "engine":
                self.live[a] = open_engines(self.si, archs={a})[a]
            else:
                self.servers[a] = start_servers(self.si, self.out / "logs", archs={a})
                self.live[a] = self.servers[a].clients[a]
        return {a: self.live[a] for a in archs}

    def release(self, archs: set[str]) -> None:
        """Close what this rehearsal opened for ``archs`` (a reused engine stays up)."""
        for a in sorted(archs & set(self.live)):
            b = self.live.pop(a)
            if a in self.servers:
                self.servers.pop(a).close()
            elif not (a in self.reused and self.path == "engine"):
                b.close()


@dataclass(frozen=True)
class RunningServer:
    """A ``vllm serve`` already running: where, its key, the spec it was started with (its
    context included) and the name it serves the model by."""

    base_url: str
    api_key: str | None
    spec: ModelSpec
    served_model_name: str


@dataclass(frozen=True)
class Running:
    """Engines (arch -> in-process backend) and servers (arch -> :class:`RunningServer`) already
    running, used in place of starting the stand-ins' own (the tests reuse their session engine
    and server); the caller closes them. What may differ from the stand-in:
    :func:`~agent.reproduce.rehearse.standins.check_reuse`."""

    engines: Mapping[str, Backend] = field(default_factory=dict)
    servers: Mapping[str, RunningServer] = field(default_factory=dict)

    def specs(self, path: str) -> dict[str, ModelSpec]:
        """arch -> the spec each running engine (``engine``) or server (``server``) runs."""
        if path == "server":
            return {a: s.spec for a, s in self.servers.items()}
        out = {}
        for a, b in self.engines.items():
            spec, opts = b.spec, b.options  # a VLLMBackend: its registry entry and engine options
            out[a] = replace(spec, max_model_len=opts.max_model_len or spec.max_model_len)
        return out


def rehearse(
    cfgs: Sequence[ReproConfig],
    out: Path,
    *,
    shared: Path,
    registry: Registry,
    model_root: Path | None = None,
    paths: Sequence[str] = PATHS,
    progress: Progress = NULL_PROGRESS,
    running: Running = Running(),
    size: RehearsalSize = RehearsalSize(),
    data_root: Path | None = None,
) -> dict[str, Rehearsal]:
    """Rehearse ``cfgs`` on ``paths`` into ``out`` (module docstring); returns per config.
    ``running``: engines and servers to reuse; ``size``: how far windows and items shrink;
    ``data_root``: where FinAcumen configs find their released benchmarks (None: stand-ins)."""
    out.mkdir(parents=True, exist_ok=True)
    keys = [k for c in cfgs for k in c.model_keys]
    archs = engine_groups(keys, registry)  # only what these configs use is reused
    reused = {p: {a: s for a, s in running.specs(p).items() if a in archs} for p in paths}
    models = {a: Path(spec.resolve_path()) for by in reused.values() for a, spec in by.items()}
    si = stand_ins(keys, model_root or out / "models", registry, models=models)
    result: dict[str, Rehearsal] = {}
    needs = [{si.arch_of(k) for k in c.model_keys} for c in cfgs]
    for path in paths:
        notes = [n for a, spec in reused[path].items() for n in check_reuse(si, a, spec, path)]
        pool = _Backends(si, path, out, running, set(reused[path]))
        try:
            for i, cfg in enumerate(cfgs):
                r = result.setdefault(cfg.name, Rehearsal())
                _one_config(cfg, si, pool.get(needs[i]), path, out, r, shared, size, data_root)
                pool.release(needs[i] - set().union(*needs[i + 1 :]))
                r.notes += notes
        finally:
            pool.release(set(pool.live))
    return result


def _md_table(rows: Sequence[Sequence[Any]], head: Sequence[str]) -> list[str]:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(str(c).replace("|", "/") for c in r) + " |" for r in rows]
    return lines


def write_rehearsal(result: dict[str, Rehearsal], out: Path, *, si_note: str = "") -> tuple[Path, Path]:
    """``rehearsal.md`` and ``rehearsal.json`` in ``out``."""
    from agent.reproduce.rehearse.sizes import TOKEN_BASIS
    from agent.reproduce.rehearse.standins import THINK_BIAS

    md = [
        "# GPU rehearsal on the CPU",
        "",
        "Each config at its GPU settings with tiny random stand-ins of its backbones (same architecture "
        "class, parsers, context, budgets, timeouts), windows and items shrunk, through the in-process "
        "engine (`engine`) and `vllm serve` on loopback (`server`). A logit bias of "
        f"{THINK_BIAS:g} on `</think>` makes the random thinking models close their reasoning after a few "
        "tokens (otherwise every call would spend the full budget).",
        f"Prompt tokens: {TOKEN_BASIS}, unless a row names a real tokenizer.",
        "",
    ]
    doc: dict[str, Any] = {}
    for name, r in result.items():
        md += [f"## {name}", "", f"wall time: {r.wall_s}", ""]
        rows = []
        for c in r.checks:
            s = c.seen
            settings = (
                f"max_tokens {s['max_tokens']}, thinking {s['thinking']}, temperature {s['temperature']}, "
                f"top_p {s['top_p']}, seeded {s['seeded']}, schema {s['schema']}, "
                f"images<= {s['max_images']}, "
                f"engine {s['engine']}"
                if c.name == "settings"
                else ""
            )
            ok = {True: "ok", False: "FAILED", None: "-"}[c.ok]
            rows.append((c.path, c.call_type, c.name, ok, c.detail + (f"; {settings}" if settings else "")))
        md += _md_table(rows, ("path", "call type", "check", "result", "seen"))
        md += ["", "Largest prompt per call type vs the context (room = max_model_len - max_tokens):", ""]
        md += _md_table(
            [
                (
                    s.call_type,
                    s.chars,
                    s.tokens_est,
                    s.tokens_bound,
                    s.image_tokens,
                    s.max_model_len,
                    s.max_tokens,
                    s.room,
                    "yes" if s.fits else "NO",
                    s.basis,
                )
                for s in r.sizes
            ],
            (
                "call type",
                "chars",
                "tokens (est.)",
                "tokens (bound)",
                "image tokens",
                "max_model_len",
                "max_tokens",
                "room",
                "fits",
                "basis",
            ),
        )
        if r.qa_stages:
            from agent.reproduce.rehearse.qa_rehearsal import stage_markdown

            md += stage_markdown(r.qa_stages, r.qa_cuts)
        if any(r.authors_texts.values()):
            from agent.reproduce.rehearse.authors_rehearsal import authors_markdown

            md += authors_markdown(r.authors_texts)
        md += [""] + [f"- {n}" for n in r.notes] + [""]
        doc[name] = {
            "checks": [asdict(c) for c in r.checks],
            "sizes": [s.to_dict() for s in r.sizes],
            "notes": r.notes,
            "wall_s": r.wall_s,
            "calls_per_step": r.calls_per_step,
            "failed": len(r.failed),
            "too_long": [s.call_type for s in r.too_long],
            **({"qa_stages": r.qa_stages, "qa_cuts": r.qa_cuts} if r.qa_stages else {}),
            **({"authors_texts": r.authors_texts} if any(r.authors_texts.values()) else {}),
        }
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "rehearsal.json").write_text(
            json.dumps(doc[name], indent=1, default=str), encoding="utf-8"
        )
    mdp, jp = out / "rehearsal.md", out / "rehearsal.json"
    mdp.write_text("\n".join(md) + "\n", encoding="utf-8")
    jp.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    return mdp, jp
