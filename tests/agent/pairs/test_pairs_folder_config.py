"""The experiment folder's copy of its config states where its store (and prompt folders) are, so
that read from the folder it names the same files; the manifest check compares paths by meaning,
so a healthy folder is never reported as holding another experiment's manifest (the demo's
folder, written under a relative path, included)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from agent.pairs.experiment.config import config_to_dict, load_config, parse_config
from agent.pairs.experiment.demo import demo_config_text, demo_document
from agent.pairs.experiment.folder_config import folder_copy, same_path
from agent.pairs.experiment.integrity import check_tree
from agent.pairs.experiment.run import check_manifest
from localfin.errors import DamagedFileError

TEXT = """# my experiment
[experiment]
name = "mine"
store = "data/market.sqlite"   # beside this file
seeds = [0]

[windows]
train_start = "2014-12-26"
train_end = "2015-01-16"
test_start = "2015-01-19"
test_end = "2015-05-15"

[prompt]
dir = "texts"
"""


def _write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "texts").mkdir(exist_ok=True)
    path = folder / "exp.toml"
    path.write_text(text)
    return path


def test_the_copy_states_the_paths_absolutely_and_keeps_the_rest_of_the_text(tmp_path, monkeypatch):
    cfg = load_config(_write(tmp_path / "cfg", TEXT))
    copy = folder_copy(TEXT, cfg)
    assert "# my experiment" in copy and 'test_end = "2015-05-15"' in copy  # the user's text stays
    assert f'store = "{tmp_path / "cfg" / "data" / "market.sqlite"}"' in copy
    assert f'dir = "{tmp_path / "cfg" / "texts"}"' in copy
    # read from the experiment folder, the copy names the same files
    out = tmp_path / "runs" / "mine"
    out.mkdir(parents=True)
    (out / "config.toml").write_text(copy)
    again = load_config(out / "config.toml")
    assert (again.store, again.prompt.dir) == (cfg.store, cfg.prompt.dir)
    assert folder_copy(copy, again) == copy  # stated already: written as it is


def test_a_store_left_to_the_default_is_stated_and_an_unusual_text_is_written_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("LOCALFIN_STORE", "rel/market.sqlite")
    monkeypatch.chdir(tmp_path)
    text = TEXT.replace('store = "data/market.sqlite"   # beside this file\n', "")
    cfg = load_config(_write(tmp_path / "cfg", text))
    assert cfg.store == tmp_path / "rel" / "market.sqlite"
    copy = folder_copy(text, cfg)
    assert tomllib.loads(copy)["experiment"]["store"] == str(tmp_path / "rel" / "market.sqlite")
    # dotted keys: the line edit does not apply; the document is written anew, same meaning
    windows = "[windows]" + TEXT.split("[windows]", 1)[1].split("[prompt]", 1)[0]
    dotted = 'experiment.name = "mine"\nexperiment.store = "data/m.sqlite"\n\n' + windows
    cfg2 = parse_config(tomllib.loads(dotted), base_dir=tmp_path / "cfg")
    anew = folder_copy(dotted, cfg2)
    assert anew.startswith("# the experiment's config, written anew")
    assert tomllib.loads(anew)["experiment"]["store"] == str(tmp_path / "cfg" / "data" / "m.sqlite")


def test_the_demo_folder_written_under_a_relative_path_is_its_own(tmp_path, monkeypatch):
    """`localfin demo --out reports/demo`: the Moira part's folder is relative; its copy, read
    from the folder, names the store the run used, and the manifest check agrees."""
    monkeypatch.chdir(tmp_path)
    out = Path("reports/demo/moira")
    out.mkdir(parents=True)
    cfg = parse_config(demo_document(), base_dir=out)
    assert cfg.store == tmp_path / out / "market.sqlite"  # absolute: the same file from anywhere
    (out / "config.toml").write_text(folder_copy(demo_config_text(), cfg))
    assert load_config(out / "config.toml").store == cfg.store
    (out / "manifest.json").write_text(
        json.dumps({"config": json.loads(json.dumps(config_to_dict(cfg), default=str))})
    )
    assert check_tree(out) == []


def test_a_manifest_recording_the_same_store_by_another_spelling_is_not_damage(tmp_path, monkeypatch):
    """A folder written before copies stated their store: its manifest holds the store as it was
    spelt then (relative to the working directory), its copy the config's own words."""
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "reports" / "demo" / "moira"
    out.mkdir(parents=True)
    (out / "config.toml").write_text(demo_config_text())  # store = "market.sqlite", as written before
    cfg = load_config(out / "config.toml")
    old = json.loads(json.dumps(config_to_dict(cfg), default=str))
    old["store"] = "reports/demo/moira/market.sqlite"
    (out / "manifest.json").write_text(json.dumps({"config": old}))
    check_manifest(out, cfg)  # the same file
    assert check_tree(out) == []
    # the same, audited from another folder (the recorded path ends the folder's own)
    monkeypatch.chdir(tmp_path / "reports")
    assert check_tree(out) == []
    # another store is another experiment
    old["store"] = "elsewhere/market.sqlite"
    (out / "manifest.json").write_text(json.dumps({"config": old}))
    with pytest.raises(DamagedFileError, match=r"config\.store"):
        check_manifest(out, cfg)


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("/x/y/m.sqlite", "/x/y/m.sqlite", True),
        ("/x/y/../y/m.sqlite", "/x/y/m.sqlite", True),
        ("y/m.sqlite", "/x/y/m.sqlite", True),  # recorded relative to a folder unknown here
        ("z/m.sqlite", "/x/y/m.sqlite", False),
        ("../m.sqlite", "/x/m.sqlite", False),  # cannot say: not the same
        ("/x/a.sqlite", "/x/b.sqlite", False),
        ("", "/x/b.sqlite", False),
    ],
)
def test_same_path(a, b, same):
    assert same_path(a, b) is same and same_path(b, a) is same
