"""The protocol pages of the documentation site (``protocol/moira.md``, ``protocol/finacumen.md``,
written at build time), rendered from the ledger and the shipped configs: every setting by
stage, what the paper says, each value with its provenance and the shipped configs that use it,
then the code defaults that are not the paper's and the operational settings."""

from __future__ import annotations

import json

from agent.reproduce.ledger.book import (
    AUTHORS_REPOS,
    Ledger,
    LedgerEntry,
    LedgerValue,
    entries_by_stage,
    load_ledger,
    parse_at,
)
from agent.reproduce.ledger.effective import default_settings, effective_settings
from agent.reproduce.ledger.resolve import Resolved, resolve

__all__ = ["render_protocol", "PAGE_TITLES"]

PAGE_TITLES = {"moira": "Moira protocol", "finacumen": "FinAcumen protocol"}
_KIND = {"moira": "moira", "finacumen": "qa"}


def _cell(text: str) -> str:
    """``text`` safe in a table cell: pipes and line breaks escaped, and what Markdown would
    read as markup in a quote (a backslash, an angle bracket) kept as written."""
    text = text.replace("\\", "\\\\").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("|", "\\|").replace("\n", " ")


def _short(name: str, paper: str) -> str:
    return name.removeprefix(f"{paper}_")


def _users(entry: LedgerEntry, uses: dict[str, list[Resolved]], row: LedgerValue) -> list[str]:
    """The shipped configs (and ``default``) that resolve a setting of ``entry`` to ``row``."""
    return [name for name, rows in uses.items() if any(r.entry is entry and r.row is row for r in rows)]


def _locator(v: LedgerValue) -> str:
    """A row's evidence as the page shows it: section and quote of a paper row (with what the
    paper states, where the value converts it), a link to the line of an authors row."""
    if v.provenance == "paper":
        stated = f" (states {json.dumps(v.stated)})" if v.stated is not None else ""
        return f"{v.section}: “{v.quote}”{stated}"
    if v.provenance == "authors":
        repo, path, first, last = parse_at(v.at)
        name, commit = AUTHORS_REPOS[repo]
        lines = f"L{first}" + (f"-L{last}" if last != first else "")
        return f"[`{v.at}`](https://github.com/{name}/blob/{commit}/{path}#{lines})"
    return ""


def render_protocol(paper: str, ledger: Ledger | None = None) -> str:
    """The protocol page of ``paper`` (Markdown)."""
    from agent.reproduce.spec import load_all

    led = ledger or load_ledger(paper)
    configs = [c for c in load_all() if c.paper == paper]
    uses: dict[str, list[Resolved]] = {
        _short(c.name, paper): resolve(effective_settings(c), led, c.name) for c in configs
    }
    uses["default"] = resolve(default_settings(_KIND[paper]), led, "defaults")
    n_cfg = len(configs)
    title = PAGE_TITLES[paper]
    lines = [
        f"# {title}",
        "",
        "Every setting of localfin's "
        + ("Moira" if paper == "moira" else "FinAcumen")
        + " that can move a reported number, generated from the protocol ledger "
        f"(`agent/reproduce/ledger/{paper}.toml`) and the {n_cfg} shipped reproduction configs "
        "(`python -m localfin_cli.docs_pages` writes this page; a test keeps it current). Each value "
        "carries its provenance:",
        "",
        "- **paper**: the paper states it: the section and a few words quoted from the paper, near "
        "which it states the value (the setting's point in our words beside them);",
        "- **authors**: the authors' released code does it: the file and line, linked at the pinned commit ("
        + (
            "CamelliaLilium/FinAcumen at 16246593"
            if paper == "finacumen"
            else "FinMem's, pipiku915/FinMem-LLM-StockTrading at be814aa: FinMem is a baseline of the paper"
        )
        + "), and the fact in our words;",
        "- **ours**: our choice, with the reason (and what the paper leaves unsaid);",
        "- **operational** settings (paths, workers, timeouts, retries) cannot change a result and are "
        "listed at the end.",
        "",
        "Each value names the shipped configs that use it (`default`: a config that leaves the key "
        "unset); a value marked *only ...* is the paper's or the authors' in that scope alone (a "
        "config, a cell, or beside another setting's value), and the same value elsewhere is read "
        "by its other rows. `localfin reproduce settings CONFIG` prints every effective setting of a config, "
        "yours included, with its provenance; `reproduce check` and `reproduction.md` list every "
        'value that is not the paper\'s under "What differs from the paper". Values marked '
        "*reads gold* make the run read a gold answer or gold evidence at test time.",
        "",
    ]
    operational: list[LedgerEntry] = []
    for stage, entries in entries_by_stage(led):
        rows = [e for e in entries if not e.operational]
        operational += [e for e in entries if e.operational]
        if not rows:
            continue
        lines += [f"## {stage.capitalize()}", "", "| setting | the paper | values |", "|---|---|---|"]
        for e in rows:
            vals = []
            for v in e.values:
                who = _users(e, uses, v)
                if len(who) == len(uses):
                    where = "every config"
                elif who:
                    where = ", ".join(who)
                else:
                    where = "no shipped config"
                why = "; ".join(x for x in (_locator(v), v.why) if x)
                gold = " *reads gold*" if v.reads_gold else ""
                scope = f" [only {v.scope_text()}]" if v.where else ""
                text = (
                    f"`{v.label()}` **{v.provenance}**{gold}{scope}"
                    + (f": {why}" if why else "")
                    + f" ({where})"
                )
                vals.append(_cell(text))
            paper_cell = _cell(e.paper or "silent")
            if e.authors:
                paper_cell += f"<br>authors' code: {_cell(e.authors)}"
            lines.append(f"| `{e.key}`<br>{_cell(e.title)} | {paper_cell} | " + "<br>".join(vals) + " |")
        lines.append("")
    off = [e for e in led.entries if e.default_differs]
    if off:
        lines += [
            "## Defaults that are not the paper's",
            "",
            "The code defaults follow the paper where it states a value, except these (a reproduction "
            "config sets the paper's value where its table runs it; `localfin reproduce settings CONFIG` "
            "shows which):",
            "",
            "| setting | the paper's value | why the default differs |",
            "|---|---|---|",
        ]
        for e in off:
            pv = ", ".join(f"`{v.label()}`" for v in e.paper_values()) or "-"
            lines.append(f"| `{e.key}` | {pv} | {_cell(e.default_differs)} |")
        lines.append("")
    if operational:
        lines += ["## Operational settings", "", "| setting | why it cannot change a result |", "|---|---|"]
        lines += [f"| `{e.key}` ({_cell(e.title)}) | {_cell(e.why)} |" for e in operational]
        lines.append("")
    return "\n".join(lines)
