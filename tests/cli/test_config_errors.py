"""One config layer: for every kind of TOML file (experiment, lifecycle, baselines, matrix,
reproduction config, QA plan) a wrong element type, a wrong nested type, an unknown key and a
date out of order each give exactly one ``error:`` line that names the file and the key, and
exit code 2, through the command that reads the file. (The lifecycle and baselines tables and
the QA plan hold no date: their date case is the experiment's windows, or none.)"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest

EXPERIMENT = """
[experiment]
name = "x"
store = "market.sqlite"
seeds = [0, 1]
[windows]
train_start = "2019-01-02"
train_end = "2019-12-31"
test_start = "2020-01-02"
test_end = "2020-12-31"
[model]
temperature = 0.0
[model.max_tokens]
direction = 0
[lifecycle]
validation_period = 23
[baselines]
methods = ["eg_z", "finmem"]
[baselines.eg_z]
entry_z = 2.0
[baselines.finmem.memory.short]
top_k = 2
"""

MATRIX = """
[matrix]
name = "m"
seeds = [0, 1]

[[backbones]]
key = "smollm2-135m"
name = "smol"
temperature = 0.3

[[windows]]
name = "main"
train_start = "2019-01-02"
train_end = "2019-12-31"
test_start = "2020-01-02"
test_end = "2020-12-31"

[experiment]
store = "market.sqlite"
"""


def _shipped(name: str) -> str:
    return resources.files("agent.reproduce").joinpath("configs", f"{name}.toml").read_text("utf-8")


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# (kind, command, base text, edit (old, new), the key the line must name)
CASES = [
    # experiment
    ("experiment", "run", EXPERIMENT, ("seeds = [0, 1]", 'seeds = [0, "1"]'), "experiment.seeds[1]"),
    ("experiment", "run", EXPERIMENT, ("direction = 0", 'direction = "auto"'), "model.max_tokens.direction"),
    ("experiment", "run", EXPERIMENT, ('name = "x"', 'name = "x"\nsede = 1'), "experiment.sede"),
    ("experiment", "run", EXPERIMENT, ('test_start = "2020-01-02"', 'test_start = "2019-06-03"'), "windows"),
    (
        "experiment",
        "run",
        EXPERIMENT,
        ('name = "x"', 'name = "x"\nexecution = "vwap"'),
        "experiment.execution",
    ),
    (
        "experiment",
        "run",
        EXPERIMENT,
        ('name = "x"', 'name = "x"\nslippage_bps = "5"'),
        "experiment.slippage_bps",
    ),
    # lifecycle (a table of the experiment file)
    (
        "lifecycle",
        "run",
        EXPERIMENT,
        ("validation_period = 23", 'negation_cues = ["not", 1]'),
        "lifecycle.negation_cues[1]",
    ),
    (
        "lifecycle",
        "run",
        EXPERIMENT,
        ("validation_period = 23", 'news_keywords = [["merger", 2]]'),
        "lifecycle.news_keywords[0][1]",
    ),
    ("lifecycle", "run", EXPERIMENT, ("validation_period = 23", "break_every = 3"), "lifecycle.break_every"),
    ("lifecycle", "run", EXPERIMENT, ('train_end = "2019-12-31"', 'train_end = "2018-12-31"'), "windows"),
    # baselines (a table of the experiment file)
    (
        "baselines",
        "run",
        EXPERIMENT,
        ('methods = ["eg_z", "finmem"]', 'methods = ["eg_z", 1]'),
        "baselines.methods[1]",
    ),
    ("baselines", "run", EXPERIMENT, ("top_k = 2", 'top_k = "2"'), "baselines.finmem.memory.short.top_k"),
    ("baselines", "run", EXPERIMENT, ("entry_z = 2.0", "entry = 2.0"), "baselines.eg_z.entry"),
    ("baselines", "run", EXPERIMENT, ('test_end = "2020-12-31"', 'test_end = "2019-12-31"'), "windows"),
    # matrix
    ("matrix", "matrix", MATRIX, ("seeds = [0, 1]", 'seeds = [0, "1"]'), "matrix.seeds[1]"),
    (
        "matrix",
        "matrix",
        MATRIX,
        ("temperature = 0.3", "max_tokens = { direction = [1] }"),
        "model.max_tokens.direction",
    ),
    ("matrix", "matrix", MATRIX, ('name = "m"', 'name = "m"\nbogus = 1'), "matrix.bogus"),
    ("matrix", "matrix", MATRIX, ('test_start = "2020-01-02"', 'test_start = "2019-06-03"'), "windows"),
    # reproduction config (a Moira table)
    (
        "reproduce",
        "reproduce",
        _shipped("moira_table6_a3"),
        ("differs = [\n", "differs = [\n  1,\n"),
        "reproduce.differs[0]",
    ),
    (
        "reproduce",
        "reproduce",
        _shipped("moira_table6_a3"),
        ("value = 21.6", 'value = "21.6"'),
        "paper[0].value",
    ),
    (
        "reproduce",
        "reproduce",
        _shipped("moira_table6_a3"),
        ('kind = "moira"', 'kind = "moira"\nbogus = 1'),
        "reproduce.bogus",
    ),
    (
        "reproduce",
        "reproduce",
        _shipped("moira_table6_a3"),
        ('test_start = "2025-02-12"', 'test_start = "2025-01-10"'),
        "windows[0]",
    ),
    # QA plan (the [qa] table of a FinAcumen reproduction config)
    (
        "qa plan",
        "reproduce",
        _shipped("finacumen_table2"),
        ("k_max = [5]", 'k_max = [5, "3"]'),
        "qa.k_max[1]",
    ),
    (
        "qa plan",
        "reproduce",
        _shipped("finacumen_table2"),
        ('subset = "SEC-NUM"', "subset = 3"),
        "qa.bank[0].subset",
    ),
    (
        "qa plan",
        "reproduce",
        _shipped("finacumen_table2"),
        ("bank_k = 8", "bank_k = 8\nbogus = 1"),
        "qa.bogus",
    ),
]


def _argv(command: str, path: Path, tmp: Path) -> list[object]:
    if command == "run":
        return ["pairs", "run", "--config", path, "--out", tmp / "out"]
    if command == "matrix":
        return ["pairs", "matrix", "--config", path, "--out", tmp / "out", "--dry-run"]
    return ["reproduce", "check", "--config", path]


@pytest.mark.parametrize(
    ("kind", "command", "base", "edit", "key"), CASES, ids=[f"{c[0]}:{c[4]}" for c in CASES]
)
def test_one_error_line_names_file_and_key(cli, tmp_path, kind, command, base, edit, key):
    path = tmp_path / "bad.toml"
    path.write_text(_replace(base, *edit), encoding="utf-8")
    r = cli(*_argv(command, path, tmp_path))
    lines = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert r.code == 2, r.err
    assert len(lines) == 1 and len(r.err.strip().splitlines()) == 1, r.err
    assert f"file {path}" in lines[0] and key in lines[0], lines[0]


def test_the_unedited_files_are_valid(cli, tmp_path):
    # the cases above fail for their edit, not for their base
    for command, base in (("run", EXPERIMENT), ("matrix", MATRIX)):
        path = tmp_path / f"{command}.toml"
        path.write_text(base, encoding="utf-8")
        argv = _argv(command, path, tmp_path)
        if command == "run":
            r = cli(*argv)  # the store does not exist: a later error, not a config one
            assert r.code == 2 and "does not exist" in r.err and "file " not in r.err, r.err
        else:
            assert cli(*argv).code == 0
