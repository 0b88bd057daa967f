"""The report's "What happened" panel: each mechanism of the two papers, where it first happened
(run and step) and a link to the trace row that shows it, or "did not occur".

Moira (every agent run folder under the input: ``trace.parquet`` beside ``training.json``; the
experiment's ``journal.sqlite`` two levels up):

* ``break``: the held pair's lifecycle state reaches BREAK in the test window;
* ``replacement``: a validation boundary decides to replace the held pair and the re-selection
  holds another one;
* ``gate_accept`` / ``gate_reject``: a replay cycle's principle set is accepted / rolled back
  by the replay gate (a cycle without a replay is not a gate decision);
* ``news``: a news item matched by the keyword path and sent to ``news_verify``;
* ``cf_memory``: a test direction call whose prompt holds counterfactual records of earlier
  steps (read from the journal by the row's request key).

FinAcumen (every QA run folder's ``trace.jsonl``: the variants and the bank build):

* ``sandbox``: a ``python`` tool call that ran in the sandbox;
* ``gate_rejected``: the answer gate rejected a proposed answer (reasons sent back);
* ``memory_hit`` / ``memory_miss``: an ``ft_fm`` question that got / did not get a bank entry.

Only files are read (``agent.report`` imports no agent). The panel is a table plus, for each
mechanism that occurred, the trace row itself under an anchor the table links to.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.report.html import esc, names, note
from agent.report.prose import model_text

__all__ = ["MECHANISMS", "Mechanism", "find_mechanisms", "happened_section", "missing"]

log = logging.getLogger(__name__)

#: (key, part, what it shows), in the panel's order.
MECHANISMS: tuple[tuple[str, str, str], ...] = (
    ("break", "Moira", "the held pair breaks (lifecycle state BREAK) inside the test window"),
    ("replacement", "Moira", "the broken pair is replaced at a validation boundary"),
    ("gate_accept", "Moira", "the replay gate accepts a principle set"),
    ("gate_reject", "Moira", "the replay gate rejects a principle set (rolled back)"),
    ("news", "Moira", "a news item triggers the keyword path and its verification call"),
    ("cf_memory", "Moira", "the counterfactual memory of earlier steps is in a direction prompt"),
    ("sandbox", "FinAcumen", "a Python tool call runs in the sandbox"),
    ("gate_rejected", "FinAcumen", "the answer gate rejects an answer"),
    ("memory_hit", "FinAcumen", "a question finds a bank entry (memory hit)"),
    ("memory_miss", "FinAcumen", "a question finds no bank entry (memory miss)"),
)
_SKIP = {"report", "__pycache__"}


@dataclass(frozen=True)
class Mechanism:
    """Where one mechanism first happened (``occurred`` False: it did not).

    run: the run (Moira run id, or QA run folder name); step: the step (Moira: window step;
    QA: question id and step index); source: the trace file, relative to the input folder;
    row: the row's index in it; summary: one line of what happened; texts: what the model wrote
    that the row is about (a principle set's principles), shown each as written and flagged when
    it is not prose (:mod:`agent.report.prose`); row_fields: the trace row's fields shown under
    the link (a field holding JSON as text is shown as its JSON); count: how many times it
    happened in all.
    """

    key: str
    part: str
    what: str
    occurred: bool = False
    run: str = ""
    step: str = ""
    source: str = ""
    row: int = -1
    summary: str = ""
    texts: tuple[str, ...] = ()
    row_fields: Mapping[str, Any] = field(default_factory=dict)
    count: int = 0

    @property
    def anchor(self) -> str:
        return f"wh-{self.key}"


def _walk(root: Path, name: str, exclude: Path | None) -> list[Path]:
    ex = exclude.resolve() if exclude is not None else None
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(
            n
            for n in dirnames
            if not n.startswith(".") and n not in _SKIP and (ex is None or (d / n).resolve() != ex)
        )
        if name in filenames:
            out.append(d / name)
    return sorted(out)


def _loads(text: Any) -> dict[str, Any]:
    """A JSON object's fields ({} for anything else: empty, unparsable, not an object)."""
    if not isinstance(text, str) or not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class _Journal:
    """Read-only request lookups in one experiment journal (None when there is none)."""

    def __init__(self, path: Path) -> None:
        self.con = None
        if path.is_file():
            try:
                self.con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            except sqlite3.Error as exc:
                log.warning("what happened: cannot open %s: %s", path, exc)

    def request(self, key: str) -> str:
        if self.con is None or not key:
            return ""
        try:
            row = self.con.execute("SELECT request_json FROM calls WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return ""
        return row[0] if row else ""

    def close(self) -> None:
        if self.con is not None:
            self.con.close()


@dataclass
class _Found:
    """The first occurrence of each mechanism and a count of all."""

    first: dict[str, Mechanism] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, **kw: Any) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1
        if key not in self.first:
            part, what = next((p, w) for k, p, w in MECHANISMS if k == key)
            self.first[key] = Mechanism(key, part, what, True, **kw)


def _unnested(value: Any) -> Any:
    """``value`` with a text holding a JSON object or array replaced by it (a trace row stores its
    decision and detail as JSON text: shown inside the row's JSON they would be escaped twice)."""
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return _unnested(json.loads(value))
        except ValueError:
            return value
    if isinstance(value, Mapping):
        return {k: _unnested(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_unnested(v) for v in value]
    return value


def _moira_row(row: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("seq", "phase", "round", "step", "date", "kind", "pair", "call_type", "request_key")
    out = {k: row[k] for k in keep if k in row}
    for k in ("decision", "reply", "fallback", "state_before", "state_after", "detail"):
        if row.get(k):
            out[k] = _unnested(row[k])
    return out


def _moira(root: Path, trace: Path, found: _Found, journals: dict[Path, _Journal]) -> None:
    import pandas as pd

    run = trace.parent.name
    rel = str(trace.relative_to(root))
    exp = trace.parent.parent.parent
    journal = journals.setdefault(exp, _Journal(exp / "journal.sqlite"))
    rows = pd.read_parquet(trace).to_dict("records")

    def add(key: str, i: int, summary: str, texts: tuple[str, ...] = ()) -> None:
        r = rows[i]
        step = (
            f"{r['phase']} step {int(r['step']):03d}"
            if int(r["step"])
            else f"{r['phase']} round {r['round']}"
        )
        found.add(
            key, run=run, step=step, source=rel, row=i, summary=summary, texts=texts, row_fields=_moira_row(r)
        )

    for i, r in enumerate(rows):
        kind, phase, dec = r["kind"], r["phase"], _loads(r["decision"])
        if (
            kind == "lifecycle"
            and phase == "test"
            and r["state_after"] == "BREAK"
            and r["state_before"] != "BREAK"
        ):
            add("break", i, f"{r['pair']} goes {r['state_before'] or 'HEALTHY'} -> BREAK on {r['date']}")
        elif kind == "boundary" and phase == "test" and dec.get("keep") is False:
            nxt = next(
                (
                    j
                    for j in range(i + 1, len(rows))
                    if rows[j]["kind"] == "select" and rows[j]["step"] == r["step"]
                ),
                None,
            )
            if nxt is not None and rows[nxt]["state_after"] and rows[nxt]["state_after"] != r["pair"]:
                add("replacement", nxt, f"{r['pair']} replaced by {rows[nxt]['state_after']} on {r['date']}")
        elif (
            kind == "policy"
            and int(dec.get("cycle", 0) or 0) >= 1
            and dec.get("training_return") is not None
            and not dec.get("floor")  # the warmup memory kept as the floor: not the gate's verdict
        ):
            cand = tuple(str(p) for p in dec.get("candidate_principles") or dec.get("candidate") or ())
            sets = f"{len(cand)} principle{'' if len(cand) == 1 else 's'}" if cand else "an empty set"
            ret = dec.get("training_return")
            if dec.get("accepted"):
                add(
                    "gate_accept",
                    i,
                    f"cycle {dec['cycle']}: training return {ret:+.4f}, {sets} accepted",
                    cand,
                )
            else:
                why = dec.get("reason") or "not better than the best so far"
                add(
                    "gate_reject",
                    i,
                    f"cycle {dec['cycle']}: training return {ret:+.4f}, {sets} rejected ({why})",
                    cand,
                )
        elif kind == "news_verify":
            cand = _loads(r["detail"]).get("candidate", {})
            head = cand.get("headline") or cand.get("text") or ""
            add(
                "news",
                i,
                f"keyword category {cand.get('keyword_category') or '?'} in {head[:90]!r}: "
                f"verified as {dec.get('event_type', '?')}, severity {dec.get('severity', '?')}",
            )
        elif kind == "direction" and phase == "test" and r["request_key"]:
            n = journal.request(r["request_key"]).count("matched_best")
            if n:
                add("cf_memory", i, f"the direction call of {r['pair']} sees {n} counterfactual record(s)")


def _qa(root: Path, trace: Path, found: _Found) -> None:
    run = trace.parent.name
    rel = str(trace.relative_to(root))
    lines = trace.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        row = _loads(line)
        if not row:
            continue
        qid = str(row.get("item_id", "?"))
        head = {k: row.get(k) for k in ("item_id", "variant", "answer", "gate_ok", "memory_hits") if k in row}

        def add(key: str, step: str, summary: str, fields: Mapping[str, Any], row_i: int = i) -> None:
            found.add(key, run=run, step=step, source=rel, row=row_i, summary=summary, row_fields=fields)

        for s in row.get("steps") or ():
            idx = s.get("index", "?")
            fields = head | {
                f"step {idx}": {
                    k: s.get(k)
                    for k in ("kind", "action", "args", "observation", "tool_ok", "gate", "fallback")
                }
            }
            if s.get("action") == "python" and s.get("tool_ok") is not None:
                out = str(s.get("observation", ""))[:80]
                add("sandbox", f"{qid} step {idx}", f"python ran (ok={s.get('tool_ok')}): {out!r}", fields)
            if s.get("fallback") == "gate_rejected":
                add(
                    "gate_rejected",
                    f"{qid} step {idx}",
                    f"answer {(s.get('args') or {}).get('answer', '')!r} rejected: "
                    f"{str(s.get('observation', ''))[:90]!r}",
                    fields,
                )
        if row.get("variant") == "ft_fm":
            hits = row.get("memory_hits") or []
            sims = row.get("memory_similarities") or []
            if hits:
                best = max(sims) if sims else float("nan")
                add(
                    "memory_hit",
                    qid,
                    f"{len(hits)} bank entr{'y' if len(hits) == 1 else 'ies'} (best cosine {best:.3f})",
                    head,
                )
            else:
                add("memory_miss", qid, "no bank entry at or above tau", head)


def find_mechanisms(root: str | Path, exclude: Path | None = None) -> list[Mechanism]:
    """Every mechanism of :data:`MECHANISMS` with where it first happened under ``root`` (in
    that order; ``occurred`` False for those that did not)."""
    r = Path(root)
    found = _Found()
    journals: dict[Path, _Journal] = {}
    try:
        for trace in _walk(r, "trace.parquet", exclude):
            if (trace.parent / "training.json").is_file():
                _moira(r, trace, found, journals)
    finally:
        for j in journals.values():
            j.close()
    for trace in _walk(r, "trace.jsonl", exclude):
        _qa(r, trace, found)
    out = []
    for key, part, what in MECHANISMS:
        m = found.first.get(key) or Mechanism(key, part, what)
        out.append(Mechanism(**{**m.__dict__, "count": found.counts.get(key, 0)}))
    return out


def missing(mechanisms: Iterable[Mechanism], parts: Iterable[str] = ("Moira", "FinAcumen")) -> list[str]:
    """Keys of the mechanisms of ``parts`` that did not occur."""
    want = set(parts)
    return [m.key for m in mechanisms if m.part in want and not m.occurred]


def _row_html(m: Mechanism) -> str:
    body = json.dumps(_unnested(dict(m.row_fields)), indent=1, ensure_ascii=False, default=str)
    return (
        f'<details id="{esc(m.anchor)}"><summary>{esc(m.part)}: {esc(m.key)} — <code>{esc(m.source)}</code> '
        f'row {m.row}</summary><pre class="small" style="white-space:pre-wrap">{esc(body)}</pre></details>'
    )


def _texts_html(texts: tuple[str, ...]) -> str:
    """The model's texts a row is about, one item each, as written (:func:`model_text`)."""
    if not texts:
        return ""
    return '<ol class="texts">' + "".join(f"<li>{model_text(t)}</li>" for t in texts) + "</ol>"


def happened_section(
    root: str | Path, exclude: Path | None = None, *, find: Callable[..., list[Mechanism]] = find_mechanisms
) -> str:
    """The panel's HTML ("" when the input holds neither an agent run nor a QA run)."""
    mechs = find(root, exclude)
    r = Path(root)
    has = {
        "Moira": any((t.parent / "training.json").is_file() for t in _walk(r, "trace.parquet", exclude)),
        "FinAcumen": bool(_walk(r, "trace.jsonl", exclude)),
    }
    shown = [m for m in mechs if has[m.part]]
    if not shown:
        return ""
    rows = []
    for m in shown:
        if m.occurred:
            where = f"{names(m.run)}, {names(m.step)}"
            link = f'<a href="#{esc(m.anchor)}">{names(m.source)} row {m.row}</a>'
            status = f'<td data-occurred="yes">occurred ({m.count}x)</td>'
            rows.append(
                f'<tr data-mechanism="{esc(m.key)}"><td>{esc(m.part)}</td><td>{esc(m.what)}</td>{status}'
                f"<td>{where}</td><td>{link}</td><td>{names(m.summary)}{_texts_html(m.texts)}</td></tr>"
            )
        else:
            rows.append(
                f'<tr data-mechanism="{esc(m.key)}"><td>{esc(m.part)}</td><td>{esc(m.what)}</td>'
                '<td class="warn" data-occurred="no">did not occur</td><td></td><td></td><td></td></tr>'
            )
    n_missing = sum(not m.occurred for m in shown)
    head = (
        f"{len(shown) - n_missing} of {len(shown)} mechanisms occurred"
        + (f"; {n_missing} did not occur in these runs" if n_missing else "")
        + ". Each link opens the trace row where it first happened (below the table)."
    )
    table_html = (
        '<div class="scroll"><table class="happened"><thead><tr><th>part</th><th>mechanism</th>'
        "<th>status</th><th>first in (run, step)</th><th>trace row</th><th>what the row says</th>"
        "</tr></thead><tbody>" + "\n".join(rows) + "</tbody></table></div>"
    )
    details = "".join(_row_html(m) for m in shown if m.occurred)
    return (
        f'<p class="meta">{esc(head)}</p>'
        + table_html
        + details
        + (
            note("Mechanisms that did not occur are listed as such: nothing here is scripted.")
            if n_missing
            else ""
        )
    )
