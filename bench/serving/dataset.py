"""A serving dataset made from the agents' journaled prompts, in the format of vLLM's own serving
benchmark (``vllm bench serve --dataset-name custom``: one JSON object a line with ``prompt``
and ``output_tokens``).

Each journaled call (``journal.sqlite`` of a Moira experiment, a FinAcumen evaluation, a
rehearsal or a demo) becomes one line, in journal order (the order the agents sent them, so a
ReAct step follows the step whose prefix it resends; run the benchmark with
``--disable-shuffle`` to keep it):

- ``prompt``: the request's messages rendered with the serving model's chat template and its
  generation prompt (the thinking switch as the request set it), exactly the text the chat
  endpoint would tokenize; send it to ``/v1/completions`` with ``--skip-chat-template``;
- ``output_tokens``: the completion tokens the call produced (at least 1); with ``--ignore-eos``
  every request generates exactly that many;
- beside them (the benchmark ignores them): ``call_type``, ``agent`` (``moira``: selection,
  direction, reflection, lifecycle and FinMem calls; ``finacumen``: ReAct steps, bank and judge
  calls), ``prompt_tokens`` as the journal recorded them, and ``messages`` (what our own driver
  sends to the chat endpoint for the same load).

Requests that carry images are left out (the ``custom`` dataset is text only) and counted.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError

__all__ = [
    "MOIRA_CALLS",
    "ExportSummary",
    "agent_of",
    "find_journals",
    "journal_calls",
    "export_dataset",
    "read_dataset",
]

#: Call types of the pair-trading agents (Moira and the FinMem baseline); every other journaled
#: call type is FinAcumen's (qa_solve ReAct steps, bank summaries, annotations, judge calls).
MOIRA_CALLS = frozenset(
    {
        "pair_selection",
        "direction",
        "reflection",
        "break_check",
        "news_verify",
        "finmem_decision",
        "finmem_reflection",
    }
)


def agent_of(call_type: str) -> str:
    return "moira" if call_type in MOIRA_CALLS or call_type.startswith("pairs_") else "finacumen"


def find_journals(paths: Iterable[str | Path]) -> list[Path]:
    """Journal files named directly or found (``journal.sqlite`` and ``*.sqlite`` journals of
    QA runs) under the given folders, sorted."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_file():
            out.append(p)
        elif p.is_dir():
            out += sorted(f for f in p.rglob("*.sqlite") if f.name in ("journal.sqlite", "judge.sqlite"))
        else:
            raise ConfigError(f"--journal {str(p)!r}: no such file or folder")
    if not out:
        raise ConfigError(f"--journal {[str(p) for p in paths]}: no journal.sqlite found")
    return out


def journal_calls(journals: Sequence[Path]) -> list[dict[str, Any]]:
    """Every journaled (request, result) pair of ``journals``, each file in its own order."""
    from serving.journal import Journal

    out = []
    for path in journals:
        with Journal(path) as j:
            for r in j.records():
                out.append({**r, "source": str(path)})
    return out


@dataclass
class ExportSummary:
    """What :func:`export_dataset` wrote and left out."""

    path: Path
    rows: int = 0
    by_agent: dict[str, int] = field(default_factory=dict)
    by_call_type: dict[str, int] = field(default_factory=dict)
    skipped_images: int = 0
    skipped_too_long: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0


def export_dataset(
    calls: Sequence[Mapping[str, Any]],
    tokenizer_dir: str | Path,
    out: str | Path,
    *,
    max_model_len: int | None = None,
    agents: Sequence[str] = ("moira", "finacumen"),
    thinking_default: bool | None = None,
) -> ExportSummary:
    """Write the dataset (module docstring) of ``calls`` rendered with the tokenizer in
    ``tokenizer_dir``; calls whose prompt plus output would not fit ``max_model_len`` are left
    out and counted. A request that left thinking unset gets ``thinking_default`` (the served
    model's registry default, which the agents' HTTP backend sends)."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    if not tok.chat_template:
        raise ConfigError(f"tokenizer {str(tokenizer_dir)!r} carries no chat template")
    summary = ExportSummary(Path(out))
    summary.path.parent.mkdir(parents=True, exist_ok=True)
    with summary.path.open("w", encoding="utf-8") as fh:
        for c in calls:
            req, res = c["request"], c["result"]
            agent = agent_of(req["call_type"])
            if agent not in agents:
                continue
            if any(m.get("images") for m in req["messages"]):
                summary.skipped_images += 1
                continue
            messages = [{"role": m["role"], "content": m.get("content") or ""} for m in req["messages"]]
            thinking = req.get("thinking") if req.get("thinking") is not None else thinking_default
            kwargs = {} if thinking is None else {"enable_thinking": thinking}
            prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False, **kwargs)
            n_prompt = len(tok(prompt, add_special_tokens=False)["input_ids"])
            n_out = max(1, int(res["usage"]["completion_tokens"]))
            if max_model_len is not None and n_prompt + n_out > max_model_len:
                summary.skipped_too_long += 1
                continue
            row = {
                "prompt": prompt,
                "output_tokens": n_out,
                "call_type": req["call_type"],
                "agent": agent,
                "prompt_tokens": n_prompt,
                "thinking": thinking,
                "messages": messages,
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            summary.rows += 1
            summary.by_agent[agent] = summary.by_agent.get(agent, 0) + 1
            summary.by_call_type[req["call_type"]] = summary.by_call_type.get(req["call_type"], 0) + 1
            summary.prompt_tokens += n_prompt
            summary.output_tokens += n_out
    if not summary.rows:
        raise ConfigError(
            f"no journaled call of {list(agents)} to export (images: {summary.skipped_images} left out)"
        )
    return summary


def read_dataset(path: str | Path, limit: int | None = None) -> list[dict[str, Any]]:
    """The rows of a dataset file (the first ``limit``), as the benchmark reads them with
    ``--disable-shuffle``."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            rows.append(json.loads(line))
            if limit is not None and len(rows) >= limit:
                break
    return rows
