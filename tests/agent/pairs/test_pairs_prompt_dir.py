"""A user's own prompt texts (``[prompt] dir``): files of the packaged format are checked when the
config is loaded (same template variables and reply-schema fields; errors name the file and the
variable or field), a run with a copy of the packaged prompts sends byte-identical requests (the
same journal keys) as the default run, and the manifest, summary and report say which set a run
used."""

from __future__ import annotations

import json
import shutil
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from moira_support import scripted, small_config, small_store, toml_text

from agent.pairs.experiment.config import load_config, parse_config
from agent.pairs.experiment.manifest import PROMPTS, prompt_versions
from agent.pairs.experiment.run import run_experiment
from agent.prompting import check_prompt_dir, load_prompt
from localfin.errors import ConfigError
from serving.journal import Journal

WINDOWS = {"test_end": "2015-02-06"}


def packaged_copy(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    for name in PROMPTS:
        text = resources.files("agent").joinpath("prompts", f"{name}.yaml").read_text("utf-8")
        (dest / f"{name}.yaml").write_text(text, encoding="utf-8")
    return dest


def test_a_copy_of_the_packaged_prompts_loads_as_the_same_prompts(tmp_path: Path) -> None:
    d = packaged_copy(tmp_path / "mine")
    got = check_prompt_dir(d, PROMPTS)
    for name in PROMPTS:
        own, ref = got[name], load_prompt(name)
        assert (own.system, own.user, own.schema, own.version, own.sha256) == (
            ref.system,
            ref.user,
            ref.schema,
            ref.version,
            ref.sha256,
        )
        assert own.source == str(d / f"{name}.yaml") and ref.source == "package"


def test_a_renamed_variable_is_refused_naming_the_file_and_both_variables(tmp_path: Path) -> None:
    d = packaged_copy(tmp_path / "mine")
    f = d / "pairs_direction.yaml"
    f.write_text(
        f.read_text(encoding="utf-8").replace("{{ payload }}", "{{ observation }}"), encoding="utf-8"
    )
    with pytest.raises(ConfigError) as err:
        check_prompt_dir(d, PROMPTS)
    msg = str(err.value)
    assert str(f) in msg and "payload missing" in msg
    # the same file without the missing one but with the unknown one still named
    f.write_text(
        f.read_text(encoding="utf-8").replace("{{ observation }}", "{{ payload }} {{ observation }}"),
        encoding="utf-8",
    )
    with pytest.raises(ConfigError, match=r"unknown template variable\(s\) observation"):
        check_prompt_dir(d, PROMPTS)


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (
            "enum: [LONG_SHORT, SHORT_LONG, FLAT]",
            "enum: [LONG_SHORT, SHORT_LONG, HOLD]",
            "schema.properties.action.enum",
        ),
        (
            "direction_reason: {type: string, maxLength: 120}",
            "why: {type: string, maxLength: 120}",
            "direction_reason is missing",
        ),
        (
            "direction_reason: {type: string, maxLength: 120}",
            "direction_reason: {type: string}",
            "maxLength is missing",
        ),
        ("name: pairs_direction", "name: my_direction", "allowed: 'pairs_direction'"),
    ],
)
def test_a_changed_schema_or_name_is_refused(tmp_path: Path, old: str, new: str, says: str) -> None:
    d = packaged_copy(tmp_path / "mine")
    f = d / "pairs_direction.yaml"
    text = f.read_text(encoding="utf-8")
    assert old in text
    f.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        check_prompt_dir(d, PROMPTS)


def test_only_the_runs_prompt_names_are_accepted_and_the_rest_stay_packaged(tmp_path: Path) -> None:
    d = tmp_path / "mine"
    d.mkdir()
    src = resources.files("agent").joinpath("prompts", "pairs_break.yaml").read_text("utf-8")
    (d / "pairs_break.yaml").write_text(
        src.replace("at its scheduled review", "under review"), encoding="utf-8"
    )
    got = check_prompt_dir(d, PROMPTS)
    assert (
        got["pairs_break"].source.endswith("pairs_break.yaml") and "under review" in got["pairs_break"].system
    )
    assert got["pairs_direction"].source == "package"
    (d / "pairs_directoin.yaml").write_text(src, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"pairs_directoin\.yaml, not a prompt of localfin"):
        check_prompt_dir(d, PROMPTS)


def test_the_config_resolves_the_folder_and_refuses_a_bad_file_at_load(tmp_path: Path) -> None:
    d = packaged_copy(tmp_path / "cfg" / "prompts")
    _cfg, text = small_config(small_store(), windows=WINDOWS)
    f = tmp_path / "cfg" / "exp.toml"
    f.write_text(text + '\n[prompt]\ndir = "prompts"\n', encoding="utf-8")
    assert load_config(f).prompt.dir == str(d)
    p = d / "pairs_select.yaml"
    p.write_text(p.read_text(encoding="utf-8").replace("company_lines", "companies"), encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_config(f)
    assert (
        str(f) in str(err.value)
        and "pairs_select.yaml" in str(err.value)
        and "company_lines" in str(err.value)
    )


def _journal_keys(out: Path) -> list[str]:
    with Journal(out / "journal.sqlite") as j:
        return sorted(r["result"]["request_key"] for r in j.records())


def test_a_copy_of_the_packaged_prompts_gives_byte_identical_journal_keys(tmp_path: Path) -> None:
    tables = {"windows": WINDOWS, "policy": {"max_cycles": 1}, "lifecycle": {"validation_period": 8}}
    cfg, text = small_config(small_store(), **tables)
    run_experiment(cfg, tmp_path / "default", config_text=text, backend=scripted())
    d = packaged_copy(tmp_path / "copy")
    mine, mtext = small_config(small_store(), prompt={"dir": str(d)}, **tables)
    assert mine.prompt.dir == str(d)
    run_experiment(mine, tmp_path / "mine", config_text=mtext, backend=scripted())
    default, copied = _journal_keys(tmp_path / "default"), _journal_keys(tmp_path / "mine")
    assert len(default) > 20 and copied == default
    calls = {json.loads(r)["call_type"] for r in _requests(tmp_path / "mine")}
    assert {"pair_selection", "direction", "reflection", "break_check"} <= calls
    # the manifest and the summary name the set and each prompt's version and digest
    man = json.loads((tmp_path / "mine" / "manifest.json").read_text(encoding="utf-8"))
    # no FinMem among the baselines: the agent's five prompts
    assert man["prompt_set"].startswith(str(d)) and "5 of 5 prompt files" in man["prompt_set"]
    ref = prompt_versions()
    assert sorted(man["prompts"]) == sorted(p for p in PROMPTS if "finmem" not in p)
    for name in man["prompts"]:
        assert man["prompts"][name]["sha256"] == ref[name]["sha256"]
        assert man["prompts"][name]["source"] == str(d / f"{name}.yaml")
    base = json.loads((tmp_path / "default" / "manifest.json").read_text(encoding="utf-8"))
    assert base["prompt_set"] == "package" and base["prompts"]["pairs_direction"]["source"] == "package"
    summary = (tmp_path / "mine" / "summary.md").read_text(encoding="utf-8")
    assert (
        f"Prompt texts: {d}" in summary and f"pairs_direction v{ref['pairs_direction']['version']}" in summary
    )
    # and the HTML report of the folder says which set it used
    from agent.report.build import build_report

    page = build_report(tmp_path / "mine").html.read_text(encoding="utf-8")
    assert "Prompt texts: <code>" in page and str(d) in page


def _requests(out: Path) -> list[str]:
    with Journal(out / "journal.sqlite") as j:
        return [json.dumps(r["request"]) for r in j.records()]


def test_a_changed_prompt_text_reaches_the_model(tmp_path: Path) -> None:
    d = tmp_path / "own"
    d.mkdir()
    src = resources.files("agent").joinpath("prompts", "pairs_direction.yaml").read_text("utf-8")
    (d / "pairs_direction.yaml").write_text(
        src.replace(
            "Decide how to trade the active pair", "MY OWN TEXT: decide how to trade the active pair"
        ),
        encoding="utf-8",
    )
    backend = scripted()
    cfg, text = small_config(small_store(), windows=WINDOWS, policy={"max_cycles": 0}, prompt={"dir": str(d)})
    run_experiment(cfg, tmp_path / "x", config_text=text, backend=backend)
    sent = [r.messages[0].content for r in backend.calls if r.call_type == "direction"]
    assert sent and all("MY OWN TEXT" in s for s in sent)
    assert not any(
        "MY OWN TEXT" in r.messages[0].content for r in backend.calls if r.call_type != "direction"
    )


def test_the_matrix_resolves_the_folder_against_its_file(tmp_path: Path) -> None:
    from agent.pairs.experiment.matrix_config import load_matrix

    d = packaged_copy(tmp_path / "m" / "texts")
    _, text = small_config(small_store(), windows=WINDOWS)
    doc = tomllib.loads(text)
    doc.pop("model")
    body = toml_text({k: v for k, v in doc.items() if k != "windows"})
    f = tmp_path / "m" / "matrix.toml"
    f.write_text(
        '[matrix]\nname = "m"\nseeds = [0]\nbackbones = ["smollm2-135m"]\n'
        + body
        + '\n[prompt]\ndir = "texts"\n\n[windows]\n'
        + "\n".join(f'{k} = "{v}"' for k, v in {**doc["windows"]}.items())
        + "\n",
        encoding="utf-8",
    )
    (cell,) = load_matrix(f).cells()
    assert cell.config.prompt.dir == str(d.resolve())
    assert parse_config(tomllib.loads(cell.config_text)).prompt.dir == str(d.resolve())
    shutil.rmtree(d)
