"""The protocol pages of the documentation site (``protocol/moira.md``, ``protocol/finacumen.md``,
written at build time), rendered from the ledger and the shipped configs: every setting by
stage, what the paper says, each value with its provenance and the shipped configs that use it,
then the code defaults that are not the paper's and the operational settings."""

from __future__ import annotations

from agent.reproduce.ledger.book import Ledger, LedgerEntry, entries_by_stage, load_ledger
from agent.reproduce.ledger.effective import Setting, default_settings, effective_settings

__all__ = ["render_protocol", "PAGE_TITLES"]

PAGE_TITLES = {"moira": "Moira protocol", "finacumen": "FinAcumen protocol"}
_KIND = {"moira": "moira", "finacumen": "qa"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _short(name: str, paper: str) -> str:
    return name.removeprefix(f"{paper}_")


def _users(entry: LedgerEntry, uses: dict[str, list[Setting]], value_index: int) -> list[str]:
    """The shipped configs (and ``default``) whose value of ``entry`` is its value ``value_index``."""
    out = []
    for name, settings in uses.items():
        for s in settings:
            if not entry.matches(s.key):
                continue
            v = entry.value_for(s.value)
            if v is not None and entry.values.index(v) == value_index:
                out.append(name)
                break
    return out


def render_protocol(paper: str, ledger: Ledger | None = None) -> str:
    """The protocol page of ``paper`` (Markdown)."""
    from agent.reproduce.spec import load_all

    led = ledger or load_ledger(paper)
    configs = [c for c in load_all() if c.paper == paper]
    uses: dict[str, list[Setting]] = {_short(c.name, paper): effective_settings(c) for c in configs}
    uses["default"] = default_settings(_KIND[paper])
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
        "- **paper**: the paper states it (section and point, in our words);",
        "- **authors**: the authors' released code does it (file and fact"
        + (", CamelliaLilium/FinAcumen at commit 16246593" if paper == "finacumen" else "")
        + ");",
        "- **ours**: our choice, with the reason;",
        "- **operational** settings (paths, workers, timeouts, retries) cannot change a result and are "
        "listed at the end.",
        "",
        "Each value names the shipped configs that use it (`default`: a config that leaves the key "
        "unset). `localfin reproduce settings CONFIG` prints every effective setting of a config, "
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
            for i, v in enumerate(e.values):
                who = _users(e, uses, i)
                if len(who) == len(uses):
                    where = "every config"
                elif who:
                    where = ", ".join(who)
                else:
                    where = "no shipped config"
                why = v.why or (e.authors if v.provenance == "authors" else "")
                gold = " *reads gold*" if v.reads_gold else ""
                text = f"`{v.label()}` **{v.provenance}**{gold}" + (f": {why}" if why else "") + f" ({where})"
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
            "The code defaults follow the paper where it states a value, except these (every shipped "
            "reproduction config sets the paper's value):",
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
