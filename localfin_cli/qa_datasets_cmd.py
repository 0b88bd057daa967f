"""`localfin qa datasets`: every QA dataset a command takes (`--dataset`), what files it reads,
where `localfin reproduce` looks for it and whether it is there, its subsets and its scorers.

The descriptions are read from the table in :mod:`agent.qa.data.datasets`'s docstring (one place
says what each loader reads); an installed plugin's dataset is described by its plugin.
"""

from __future__ import annotations

import re
from pathlib import Path

import typer

from localfin_cli._common import result

__all__ = ["register", "dataset_rows", "loader_descriptions"]


def loader_descriptions() -> dict[str, str]:
    """Dataset name -> what its loader reads, from the table of :mod:`agent.qa.data.datasets`'s
    docstring (its ``====`` rule lines frame the rows; a row's continuation lines are indented)."""
    from agent.qa.data import datasets

    lines = (datasets.__doc__ or "").splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+ =+", line.strip())]
    out: dict[str, str] = {}
    name = ""
    for line in lines[rules[0] + 1 : rules[1]] if len(rules) >= 2 else []:
        if line[:1].strip():
            name, _, text = line.partition(" ")
            out[name] = text.strip()
        elif name:
            out[name] += " " + line.strip()
    tidy = {k: re.sub(r":\w+:`([^`]+)`", r"\1", v.replace("``", "")) for k, v in out.items()}
    return {k: re.sub(r"\s+", " ", v).replace("/ {", "/{") for k, v in tidy.items()}


def dataset_rows(data_root: Path) -> list[dict[str, str]]:
    """One row per dataset: name, source (localfin or the plugin), what it reads, the folder
    ``localfin reproduce`` reads under ``data_root`` and whether it exists, subsets, scorers
    (the default first)."""
    from agent.qa.data.datasets import SUBSETS
    from agent.qa.data.extensions import DATASETS_REGISTRY, dataset_names, dataset_plugin
    from agent.qa.scoring.scorers import DEFAULT_SCORERS, SCORERS

    described = loader_descriptions()
    rows = []
    for name in dataset_names():
        plugin = dataset_plugin(name)
        folder = data_root / "benchmarks" / name
        if plugin is not None:
            reads, scorers = f"the plugin's loader ({plugin.scorer_name})", name
        else:
            reads = described.get(name, "") + (
                "; write it with localfin qa demo-set" if name == "demo" else ""
            )
            names = list(SCORERS.get(name, {}))
            default = DEFAULT_SCORERS.get(name, "")
            scorers = ", ".join([f"{default} (default)"] * bool(default) + [s for s in names if s != default])
        subsets = ", ".join(SUBSETS.get(name, ()))
        subsets = subsets or ("its tasks (SEC-NUM by default)" if name == "bizbench" else "-")
        rows.append(
            {
                "dataset": name,
                "from": DATASETS_REGISTRY.origin(name),
                "reads": reads,
                "folder": str(folder),
                "present": "yes" if folder.exists() else "no",
                "subsets": subsets,
                "scorers": scorers or "-",
            }
        )
    return rows


def datasets(
    data_root: Path | None = typer.Option(
        None,
        "--data-root",
        help="The data folder whose benchmarks/ is looked at (default: $LOCALFIN_DATA_DIR).",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per dataset instead of the text."),
) -> None:
    """List every QA dataset: what files it reads (nothing is downloaded: `--data` names your copy),
    where `localfin reproduce` looks for it and whether it is there, its subsets and scorers
    (`qa eval --scorer`)."""
    import json
    import textwrap

    from localfin import env

    rows = dataset_rows(data_root or env.data_dir())
    if as_json:
        result(None, "\n".join(json.dumps(r) for r in rows))
        return
    lines = []
    for r in rows:
        where = "present" if r["present"] == "yes" else "absent"
        lines.append(f"{r['dataset']} ({r['from']}): {where} at {r['folder']}")
        for key in ("reads", "subsets", "scorers"):
            lines += textwrap.wrap(f"{key}: {r[key]}", 100, initial_indent="    ", subsequent_indent="      ")
    result(None, "\n".join(lines))


def register(qa_app: typer.Typer) -> None:
    """Add ``datasets`` to the ``localfin qa`` group."""
    qa_app.command("datasets")(datasets)
