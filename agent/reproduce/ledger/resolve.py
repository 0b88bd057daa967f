"""A config's effective settings read against its paper's ledger: each setting's provenance and
reason (:func:`resolve`), the "What differs from the paper" lines that ``reproduce check`` and
``reproduction.md`` print (:func:`differs_lines`), and the completeness problems a test keeps
empty for every shipped config (:func:`problems`).

A setting whose key has no entry, or whose value the entry does not list, is ``unlisted``: a
user's own config may have such values (they are printed as set by the config), a shipped
config may not.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from agent.reproduce.ledger.book import STAGES, Ledger, LedgerEntry, LedgerValue, Use, load_ledger
from agent.reproduce.ledger.effective import Setting, effective_settings, scope_text
from agent.reproduce.spec import ReproConfig

__all__ = [
    "UNLISTED",
    "OPERATIONAL",
    "Resolved",
    "ledger_of",
    "resolve",
    "resolve_config",
    "provenance_counts",
    "differs_lines",
    "differs_section",
    "reads_gold_lines",
    "problems",
    "settings_json",
    "format_settings",
]

#: The provenance of a value no ledger entry lists.
UNLISTED = "unlisted"
#: The provenance of a setting that cannot change a result.
OPERATIONAL = "operational"


@dataclass(frozen=True)
class Resolved:
    """A setting with its provenance (``paper``, ``authors``, ``ours``, ``operational`` or
    ``unlisted``), the reason shown with it, the entry that declares it (None: no entry), the
    value row that gives the provenance (None: operational or unlisted) and whether it reads gold
    data at test time."""

    setting: Setting
    provenance: str
    why: str
    entry: LedgerEntry | None
    reads_gold: bool = False
    row: LedgerValue | None = None

    @property
    def key(self) -> str:
        return self.setting.key

    def value_text(self) -> str:
        return json.dumps(self.setting.value)


def ledger_of(cfg: ReproConfig) -> Ledger:
    """The ledger of ``cfg``'s paper."""
    return load_ledger(cfg.paper)


def _lookups(settings: Sequence[Setting]) -> dict[str, dict[str, list[tuple[str, Any]]]]:
    """Per cell, per key: the ``(element, value)`` of every use (for rows' ``where`` on keys)."""
    out: dict[str, dict[str, list[tuple[str, Any]]]] = {}
    for s in settings:
        for cell, el in s.uses or (("", ""),):
            out.setdefault(cell, {}).setdefault(s.key, []).append((el, s.value))
    return out


def _use(
    config: str, cell: str, el: str, key: str, table: dict[str, dict[str, list[tuple[str, Any]]]]
) -> Use:
    def lookup(other: str) -> list[Any]:
        rows = table.get(cell, {}).get(other, [])
        array = key.split("[]", 1)[0] if "[]" in key else None
        if array is not None and other.startswith(array + "[]"):  # the same element of one array
            rows = [r for r in rows if r[0] == el]
        return [v for _, v in rows]

    return Use(config, cell, el, lookup)


def _why(e: LedgerEntry, v: LedgerValue) -> str:
    if v.provenance == "paper":
        why = f"{v.locator()}; {e.paper}" if e.paper else v.locator()
    elif v.provenance == "authors":
        why = f"{e.authors} ({v.locator()})"
    else:
        return v.why
    return f"{why}; {v.why}" if v.why else why


def resolve(settings: Sequence[Setting], ledger: Ledger, config: str = "") -> list[Resolved]:
    """Each setting read against ``ledger`` (``config``: the reproduction config's name, for rows
    scoped to configs). A value is resolved per use (cell and element): where its uses resolve
    to different rows, the setting is split into one row per scope."""
    table = _lookups(settings)
    out = []
    for s in settings:
        e = ledger.entry_for(s.key)
        if e is None:
            out.append(Resolved(s, UNLISTED, "no ledger entry for this key", None))
            continue
        if e.operational:
            out.append(Resolved(s, OPERATIONAL, e.why, e))
            continue
        uses = s.uses or (("", ""),)
        groups: dict[int, tuple[LedgerValue | None, list[tuple[str, str]]]] = {}
        for cell, el in uses:
            v = e.value_for(s.value, _use(config, cell, el, s.key, table))
            groups.setdefault(id(v), (v, []))[1].append((cell, el))
        for v, part in groups.values():
            one = s if len(groups) == 1 else replace(s, scope=scope_text(part), uses=tuple(part))
            if v is None:
                out.append(Resolved(one, UNLISTED, "a value the ledger does not list: set by this config", e))
            else:
                out.append(Resolved(one, v.provenance, _why(e, v), e, v.reads_gold, v))
    return out


def resolve_config(cfg: ReproConfig, registry: Any = None) -> list[Resolved]:
    """Every effective setting of ``cfg`` with its provenance."""
    return resolve(effective_settings(cfg, registry), ledger_of(cfg), cfg.name)


def provenance_counts(rows: Sequence[Resolved]) -> dict[str, int]:
    """Settings per provenance (each key counted once, by its first value's provenance)."""
    seen: dict[str, str] = {}
    for r in rows:
        seen.setdefault(r.key, r.provenance)
    c = Counter(seen.values())
    return {p: c[p] for p in ("paper", "authors", "ours", OPERATIONAL, UNLISTED) if c[p]}


def _line(r: Resolved) -> str:
    scope = f" ({r.setting.scope})" if r.setting.scope else ""
    title = f" ({r.entry.title})" if r.entry is not None else ""
    gold = " [reads gold at test time]" if r.reads_gold else ""
    return f"`{r.key}` = {r.value_text()}{scope}{title}: {r.provenance}{gold}: {r.why}"


def _stage_order(rows: Sequence[Resolved], paper: str) -> list[Resolved]:
    stages = STAGES.get(paper, ())
    rank = {s: i for i, s in enumerate(stages)}
    return sorted(rows, key=lambda r: rank.get(r.entry.stage if r.entry else "", len(rank)))


def differs_lines(rows: Sequence[Resolved], paper: str = "") -> list[str]:
    """One line per setting whose value is not the paper's (operational ones left out), by the
    ledger's stages (file order within a stage)."""
    return [_line(r) for r in _stage_order(rows, paper) if r.provenance not in ("paper", OPERATIONAL)]


def differs_section(cfg: ReproConfig, rows: Sequence[Resolved], *, heading: str = "") -> list[str]:
    """The "What differs from the paper" text of ``reproduce check`` and ``reproduction.md``:
    the settings whose value is not the paper's (generated from the ledger), then the facts
    that are not settings (the config's ``[reproduce] differs``), then the settings that read
    gold data at test time."""
    lines = differs_lines(rows, cfg.paper)
    counts = ", ".join(f"{n} {p}" for p, n in provenance_counts(rows).items())
    out = [
        f"{heading}What differs from the paper",
        "",
        f"Settings ({len(lines)} values not the paper's; keys by provenance: {counts}; every setting: "
        f"`localfin reproduce settings {cfg.name}`):",
        "",
        *[f"- {x}" for x in lines],
        "",
        "Facts that are not settings:",
        "",
        *[f"- {d}" for d in cfg.differs],
    ]
    gold = reads_gold_lines(rows)
    if gold:
        out += [
            "",
            "Settings that read gold answers or gold evidence at test time:",
            "",
            *[f"- {x}" for x in gold],
        ]
    return out


def reads_gold_lines(rows: Sequence[Resolved]) -> list[str]:
    """One line per setting whose value reads the gold answer or gold evidence at test time."""
    return [_line(r) for r in rows if r.reads_gold]


def problems(rows: Sequence[Resolved]) -> list[str]:
    """What keeps ``rows`` from being fully declared: keys without an entry, values not listed."""
    out = []
    for r in rows:
        if r.provenance == UNLISTED:
            scope = f" ({r.setting.scope})" if r.setting.scope else ""
            out.append(f"{r.key} = {r.value_text()}{scope}: {r.why}")
    return out


def settings_json(cfg: ReproConfig, rows: Sequence[Resolved]) -> dict[str, Any]:
    """The JSON document of ``localfin reproduce settings --json``."""
    return {
        "config": cfg.name,
        "paper": cfg.paper,
        "counts": provenance_counts(rows),
        "settings": [
            {
                "key": r.key,
                "value": r.setting.value,
                "scope": r.setting.scope,
                "stage": r.entry.stage if r.entry else "",
                "title": r.entry.title if r.entry else "",
                "provenance": r.provenance,
                "why": r.why,
                "paper": r.entry.paper if r.entry else "",
                "authors": r.entry.authors if r.entry else "",
                "locator": _locator(r.row),
                "reads_gold": r.reads_gold,
            }
            for r in rows
        ],
        "facts": list(cfg.differs),
    }


def _locator(v: LedgerValue | None) -> dict[str, Any]:
    """A row's locator as the JSON document gives it: ``section`` and ``quote`` (and ``stated``)
    of a paper row, ``at`` and ``token`` of an authors row, nothing otherwise."""
    if v is None or v.provenance == "ours":
        return {}
    if v.provenance == "paper":
        return {
            "section": v.section,
            "quote": v.quote,
            **({"stated": v.stated} if v.stated is not None else {}),
        }
    return {"at": v.at, "token": list(v.token)}


def format_settings(cfg: ReproConfig, rows: Sequence[Resolved]) -> str:
    """The text of ``localfin reproduce settings`` (one line per setting, then the counts)."""
    lines = [f"{cfg.name}: {len(rows)} effective settings ({cfg.paper} ledger)"]
    for r in rows:
        scope = f" [{r.setting.scope}]" if r.setting.scope else ""
        gold = " reads-gold" if r.reads_gold else ""
        lines.append(f"{r.provenance:<11} {r.key} = {r.value_text()}{scope}{gold}  -- {r.why}")
    counts = ", ".join(f"{n} {p}" for p, n in provenance_counts(rows).items())
    lines.append(f"keys by provenance: {counts}")
    return "\n".join(lines)
