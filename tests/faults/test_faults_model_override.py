"""`localfin pairs run --config FILE --model KEY`: every call names the model given on the
command line, the folder's config copy records it, and a resume gives it again."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fake_openai import FakeOpenAI
from faults_support import openai_config

from localfin_cli.main import main


def test_the_model_option_replaces_the_configs_backbone(tmp_path: Path, capsys) -> None:
    srv = FakeOpenAI(api_key=None, model="tiny-qwen3")  # refuses a request for any other model
    try:
        config = openai_config(tmp_path, srv.base_url)
        assert tomllib.loads(config.read_text())["model"]["backbone"] == "smollm2-135m"
        out = tmp_path / "exp"
        argv = ["pairs", "run", "--config", str(config), "--out", str(out)]
        assert main([*argv, "--model", "tiny-qwen3"]) == 0, capsys.readouterr().err
        assert srv.answered  # the calls reached the server under the overriding key
        copy = tomllib.loads((out / "config.toml").read_text(encoding="utf-8"))
        assert copy["model"]["backbone"] == "tiny-qwen3"
        assert copy["experiment"]["store"] == tomllib.loads(config.read_text())["experiment"]["store"]
        calls = len(srv.answered)
        capsys.readouterr()
        assert main([*argv, "--resume"]) == 2  # without the override: the config's own model, refused
        assert "not 'smollm2-135m'" in capsys.readouterr().err
        assert main([*argv, "--model", "tiny-qwen3", "--resume"]) == 0
        assert len(srv.answered) == calls  # every call replayed from the journal
    finally:
        srv.close()
