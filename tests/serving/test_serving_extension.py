"""Models and backends added without editing localfin: a user's models file, installed plugins'
entry points (a throwaway distribution on sys.path), and an unknown model key that fails before
any call."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from pathlib import Path

import pytest

from localfin.errors import ConfigError
from localfin.plugins import PluginError
from serving.models.registry import default_registry
from serving.models.user_models import forget_plugin_models, load_models_file
from serving.open import BACKENDS, BackendSpec, backend_kinds, model_facts, open_backend

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "agent" / "pairs"))


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    import contextlib
    import io
    import os

    from localfin_cli.main import main

    out, err = io.StringIO(), io.StringIO()
    old = dict(os.environ)
    os.environ.update(env or {})
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        os.environ.clear()
        os.environ.update(old)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture()
def models_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ckpt = tmp_path / "ckpt" / "My-FT-Llama"
    ckpt.mkdir(parents=True)
    (ckpt / "config.json").write_text(json.dumps({"max_position_embeddings": 8192}))
    (tmp_path / "template.jinja").write_text("{{ messages }}")
    path = tmp_path / "models.toml"
    path.write_text(
        textwrap.dedent(
            """
            [[models]]
            key = "my-llama"
            extends = "llama-3.1-8b"
            path = "ckpt/My-FT-Llama"
            chat_template = "template.jinja"
            tensor_parallel_size = 2
            max_model_len = 16384
            default_max_tokens = 2048

            [[models]]
            key = "qwen3-4b"
            extends = "qwen3-4b"
            path = "ckpt/My-FT-Llama"
            """
        )
    )
    monkeypatch.setenv("LOCALFIN_MODELS_FILE", str(path))
    return path


def test_a_models_file_adds_a_model_and_replaces_an_entry(models_file):
    reg = default_registry()
    spec = reg.get("my-llama")
    folder = models_file.parent / "ckpt" / "My-FT-Llama"
    assert spec.path == folder and spec.resolve_path() == folder
    # what the file names, and what it takes from the entry it extends
    assert (spec.tensor_parallel_size, spec.max_model_len, spec.default_max_tokens) == (2, 16384, 2048)
    assert spec.tool_call_parser == "llama3_json" and spec.arch == "llama" and spec.device == "gpu"
    assert spec.chat_template == str(models_file.parent / "template.jinja")
    assert reg.origin("my-llama") == f"file {models_file}" and reg.origin("llama-3.1-8b") == "localfin"
    replaced = reg.get("qwen3-4b")
    assert (
        replaced.path == folder and replaced.reasoning_parser == "qwen3" and replaced.thinking_default is True
    )
    assert model_facts("my-llama").max_model_len == 16384


def test_a_model_from_a_file_is_served_and_opened(models_file):
    code, out, err = _cli("serve", "my-llama", "--dry-run", "--port", "8123", "--", "--max-num-seqs", "7")
    assert code == 0, err
    folder = str(models_file.parent / "ckpt" / "My-FT-Llama")
    assert folder in out and "--served-model-name my-llama" in out
    assert "--tensor-parallel-size 2" in out and "--tool-call-parser llama3_json" in out
    assert out.split()[-2:] == ["--max-num-seqs", "7"]  # the extra vLLM flags come last
    be = open_backend(BackendSpec("vllm", "my-llama"))  # the engine starts on the first call only
    try:
        kwargs = be._engine_kwargs()
        assert kwargs["model"] == folder and kwargs["tensor_parallel_size"] == 2
        assert kwargs["max_model_len"] == 16384
    finally:
        be.close()


def test_serve_takes_a_checkpoint_folder(tmp_path):
    ckpt = tmp_path / "Some Model"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps({"max_position_embeddings": 4096}))
    code, out, err = _cli("serve", str(ckpt), "--dry-run", "--device", "cpu", "--", "--enable-lora")
    assert code == 0, err
    assert "--served-model-name Some-Model" in out and "--max-model-len 4096" in out
    assert out.rstrip().endswith("--enable-lora")
    code, _, err = _cli("serve", str(tmp_path), "--dry-run")
    assert code == 2 and "holds no config.json" in err


def test_models_file_errors_name_the_file_and_the_key(tmp_path):
    def load(text: str) -> str:
        path = tmp_path / "m.toml"
        path.write_text(textwrap.dedent(text))
        with pytest.raises(ConfigError) as info:
            load_models_file(path)
        return str(info.value)

    msg = load('[[models]]\nkey = "a"\npath = "x"\ntensor_parallel = 2\n')
    assert "m.toml" in msg and "models[0].tensor_parallel" in msg and "tensor_parallel_size" in msg
    assert "give path" in load('[[models]]\nkey = "a"\n')
    assert "models[0].extends" in load('[[models]]\nkey = "a"\nextends = "nope"\n')
    assert "appears twice" in load('[[models]]\nkey = "a"\npath = "x"\n[[models]]\nkey = "a"\npath = "y"\n')
    assert "models[0].key" in load('[[models]]\nkey = "a b"\npath = "x"\n')
    assert "models[0].max_model_len" in load('[[models]]\nkey = "a"\npath = "x"\nmax_model_len = "big"\n')
    assert "stand_in" in load('[[models]]\nkey = "a"\npath = "x"\nstand_in = true\n')


def test_an_unknown_model_key_fails_before_any_call(tmp_path):
    from moira_support import WINDOWS, scripted, small_store, toml_text

    from agent import api

    doc = {
        "experiment": {"name": "t", "store": str(small_store()), "seeds": [0], "exposures": ["no_beta"]},
        "windows": dict(WINDOWS),
        "model": {"backbone": "no-such-model", "backend": "openai", "base_url": "http://127.0.0.1:9/v1"},
        "baselines": {"methods": []},
    }
    be = scripted()
    with pytest.raises(ConfigError, match=r"unknown model key 'no-such-model'; allowed: .*smollm2-135m"):
        api.run_experiment(doc, tmp_path / "exp", backend=be)
    assert be.calls == [] and not (tmp_path / "exp").exists()
    # the command line: one error line, exit 2, no experiment folder
    config = tmp_path / "exp.toml"
    config.write_text(toml_text(doc))
    code, _, err = _cli("pairs", "run", "--config", str(config), "--out", str(tmp_path / "cli"))
    assert code == 2 and "unknown model key 'no-such-model'" in err and "models-file" in err
    assert not (tmp_path / "cli").exists()


# -- plugins ------------------------------------------------------------------------------------

PLUGIN = """
import json

from serving.models.registry import ModelSpec
from serving.chat.replies import build_result
from serving.chat.types import Usage


class EchoBackend:
    name = "echo"

    def __init__(self, model):
        self.model, self.calls = model, 0

    def chat(self, requests):
        self.calls += len(requests)
        return [build_result(r, json.dumps({"echo": r.model}), finish_reason="stop", usage=Usage(1, 1, 0),
                             latency_s=0.0, backend=self.name, revision="echo") for r in requests]

    def close(self):
        pass


def open_echo(spec, registry):
    registry.get(spec.model)
    return EchoBackend(spec.model)


def more_models():
    return [ModelSpec("plugin-model", "A plugin's model", "built", device="cpu", max_model_len=2048,
                      default_max_tokens=256, arch="qwen3")]

NOT_A_FACTORY = 3
"""


def _install(tmp_path: Path, entry_points: str, name: str = "fake-localfin-plugin") -> Path:
    """A distribution on sys.path as pip would leave it: a module and a .dist-info folder."""
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "fake_localfin_plugin.py").write_text(PLUGIN)
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points))
    return site


@pytest.fixture()
def plugin_site(tmp_path, monkeypatch):
    def install(entry_points: str, name: str = "fake-localfin-plugin") -> None:
        monkeypatch.syspath_prepend(str(_install(tmp_path, entry_points, name)))
        importlib.invalidate_caches()
        BACKENDS.refresh()
        forget_plugin_models()

    yield install
    monkeypatch.undo()
    sys.modules.pop("fake_localfin_plugin", None)
    importlib.invalidate_caches()
    BACKENDS.refresh()
    forget_plugin_models()


GOOD = """
[localfin.backends]
echo = fake_localfin_plugin:open_echo

[localfin.models]
fake = fake_localfin_plugin:more_models
"""


def test_an_installed_plugin_adds_a_backend_kind_and_a_model(plugin_site):
    assert "echo" not in backend_kinds()
    plugin_site(GOOD)
    assert backend_kinds() == ("vllm", "openai", "echo")
    assert BACKENDS.origin("echo") == "plugin fake-localfin-plugin (fake_localfin_plugin:open_echo)"
    reg = default_registry()
    assert reg.get("plugin-model").display_name == "A plugin's model"
    assert reg.origin("plugin-model").startswith("plugin fake-localfin-plugin")
    from serving.chat.types import ChatRequest, Message

    be = open_backend(BackendSpec("echo", "plugin-model"))
    req = ChatRequest(model="plugin-model", messages=(Message("user", "hi"),), max_tokens=8)
    assert json.loads(be.chat([req])[0].text) == {"echo": "plugin-model"} and be.calls == 1
    # an experiment config accepts the plugin's kind, and its backend spec names it
    from agent.pairs.experiment.config import ModelConfig

    spec = ModelConfig(backbone="plugin-model", backend="echo").backend_spec()
    assert (spec.kind, spec.model) == ("echo", "plugin-model")
    with pytest.raises(ConfigError, match="allowed: vllm, openai, echo"):
        ModelConfig(backend="nope")


def test_a_broken_plugin_is_an_error_naming_it(plugin_site):
    plugin_site("[localfin.backends]\nbad = fake_localfin_plugin:NOT_A_FACTORY\n")
    with pytest.raises(PluginError, match=r"plugin fake-localfin-plugin .*'bad' is refused"):
        backend_kinds()


def test_a_plugin_cannot_take_a_builtin_name(plugin_site):
    plugin_site("[localfin.backends]\nvllm = fake_localfin_plugin:open_echo\n")
    with pytest.raises(PluginError, match="registers backend kind 'vllm', which localfin already has"):
        backend_kinds()


def test_a_plugin_that_does_not_import_is_an_error_naming_it(plugin_site):
    plugin_site("[localfin.models]\nmissing = no_such_module_here:models\n", name="broken-plugin")
    with pytest.raises(PluginError, match=r"plugin broken-plugin: entry point missing .* does not load"):
        default_registry()
