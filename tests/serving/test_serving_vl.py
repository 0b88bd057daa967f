"""The Qwen3-VL path on the CPU: a tiny random Qwen3-VL of the real architecture class, images
as ``data:`` URLs, through transformers (request building, default suite) and through vLLM,
in process (default suite: the session's ``vllm_vl_backend``, which the rehearsal test reuses,
21-31 s to start at load averages 1-4 on the 2-core machine) and behind ``vllm serve`` (``slow``:
a server of its own, 32-58 s to start).

Every image costs the prompt as many tokens as the HF processor says (the tiny model keeps
Qwen3-VL's patch and pixel settings), so comparing the engine's prompt token count with the
processor's proves that each image reached the model at its size.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from vl_support import SIZES, decode, hf_prompt_ids, png_url

from serving.chat.types import ChatRequest, Message
from serving.errors import ConfigError
from serving.models.registry import MAX_IMAGES

pytest.importorskip("transformers")
pytest.importorskip("torchvision")

SCHEMA = {
    "type": "object",
    "properties": {
        "answer": {"type": "integer", "minimum": 0, "maximum": 999},
        "unit": {"enum": ["million", "billion", "percent"]},
    },
    "required": ["answer", "unit"],
    "additionalProperties": False,
}


def two_image_request(**kw) -> ChatRequest:
    images = tuple(png_url(*s) for s in SIZES)
    kw.setdefault("max_tokens", 24)
    return ChatRequest(
        model="tiny-qwen3-vl",
        messages=(
            Message("system", "Read the charts. Answer in JSON."),
            Message("user", "Revenue in 2023 from the first chart, growth from the second?", images),
        ),
        call_type="qa_solve",
        **kw,
    )


# ------------------------------------------------------------------ default suite, no engine


def test_tiny_qwen3_vl_has_the_real_classes_and_processor_settings(tiny_vl_model_dir: Path) -> None:
    from transformers import AutoProcessor

    config = json.loads((tiny_vl_model_dir / "config.json").read_text())
    assert config["architectures"] == ["Qwen3VLForConditionalGeneration"]
    assert config["model_type"] == "qwen3_vl"
    assert config["text_config"]["rope_parameters"]["mrope_interleaved"] is True
    assert (
        sum(config["text_config"]["rope_parameters"]["mrope_section"])
        == config["text_config"]["head_dim"] // 2
    )
    processor = AutoProcessor.from_pretrained(tiny_vl_model_dir)
    assert type(processor).__name__ == "Qwen3VLProcessor"
    image = processor.image_processor
    assert (image.patch_size, image.merge_size, image.temporal_patch_size) == (16, 2, 2)
    assert image.size == {"shortest_edge": 256 * 256, "longest_edge": 4096 * 4096}
    tok = processor.tokenizer
    for name in ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id"):
        assert config[name] == processor.tokenizer.convert_tokens_to_ids(
            {
                "image_token_id": "<|image_pad|>",
                "video_token_id": "<|video_pad|>",
                "vision_start_token_id": "<|vision_start|>",
                "vision_end_token_id": "<|vision_end|>",
            }[name]
        )
    for token in ("<think>", "</think>", "<tool_call>", "</tool_call>"):  # hermes and reasoning
        assert len(tok.encode(token, add_special_tokens=False)) == 1


def test_a_two_image_request_becomes_vision_blocks_of_the_right_size(tiny_vl_model_dir: Path) -> None:
    """Request building for the VL model without an engine: our messages (text, then image
    parts as data: URLs) through the tiny model's template and processor, and one forward
    pass of the model in transformers on the result."""
    import torch
    from transformers import AutoModelForImageTextToText, AutoTokenizer

    req = two_image_request()
    tok = AutoTokenizer.from_pretrained(tiny_vl_model_dir)
    text = tok.apply_chat_template(
        [m.to_openai() for m in req.messages], tokenize=False, add_generation_prompt=True
    )
    block = "<|vision_start|><|image_pad|><|vision_end|>"
    assert text.count(block) == 2
    assert text.endswith(f"second?{block}{block}<|im_end|>\n<|im_start|>assistant\n")

    ids = hf_prompt_ids(tiny_vl_model_dir, req)
    pad = tok.convert_tokens_to_ids("<|image_pad|>")
    # 48x40 is resized up to 288x256 pixels, 300x200 to 320x224: 16-pixel patches, 2x2 merged
    assert ids.count(pad) == (288 // 32) * (256 // 32) + (320 // 32) * (224 // 32) == 142

    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_vl_model_dir)
    batch = processor(text=[text], images=[decode(u) for u in req.messages[1].images], return_tensors="pt")
    assert batch["image_grid_thw"].tolist() == [[1, 16, 18], [1, 14, 20]]
    model = AutoModelForImageTextToText.from_pretrained(tiny_vl_model_dir)
    assert type(model).__name__ == "Qwen3VLForConditionalGeneration"
    # one thread: a forward pass of a tiny model is thousands of small ops, and with a thread
    # pool each waits at a barrier, which on a loaded 2-core machine took minutes, not seconds
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            out = model(**batch)
    finally:
        torch.set_num_threads(threads)
    assert out.logits.shape[:2] == (1, len(ids))
    assert torch.isfinite(out.logits).all()


def test_image_requests_are_checked_before_the_engine_starts(tiny_vl_registry, tiny_registry) -> None:
    from serving.engines.vllm_engine import VLLMBackend

    vl = VLLMBackend("tiny-qwen3-vl", registry=tiny_vl_registry)
    five = [png_url(32, 32, c) for c in ("red", "green", "blue", "black", "white")]
    too_many = ChatRequest(model="tiny-qwen3-vl", messages=(Message("user", "x", tuple(five)),), max_tokens=4)
    with pytest.raises(ConfigError, match=f"5 images; allowed: at most {MAX_IMAGES}"):
        vl.chat([too_many])
    text_only = VLLMBackend("tiny-qwen3", registry=tiny_registry)
    with pytest.raises(ConfigError, match="does not accept images"):
        text_only.chat(
            [ChatRequest(model="tiny-qwen3", messages=(Message("user", "x", (five[0],)),), max_tokens=4)]
        )
    assert vl._llm is None and text_only._llm is None  # nothing was started


# ------------------------------------------------------------------ through vLLM


def _check_vl_results(results, model_dir: Path, req: ChatRequest) -> None:
    expected_prompt = len(hf_prompt_ids(model_dir, req))
    for res in results:
        assert res.model == "tiny-qwen3-vl" and res.call_type == "qa_solve"
        assert res.finish_reason in ("stop", "length")
        # both images reached the model at their size: vLLM's prompt = the processor's
        assert res.usage.prompt_tokens == expected_prompt
    schema_res = results[0]
    assert not schema_res.is_fallback, schema_res
    assert json.loads(schema_res.text) == schema_res.parsed


def test_two_images_reach_the_tiny_qwen3_vl_through_the_engine(
    vllm_vl_backend, tiny_vl_model_dir: Path
) -> None:
    req = two_image_request(json_schema=SCHEMA)
    _check_vl_results(vllm_vl_backend.chat([req, two_image_request()]), tiny_vl_model_dir, req)


@pytest.mark.slow
def test_two_images_reach_the_tiny_qwen3_vl_through_vllm_serve(
    tiny_vl_registry, tiny_vl_model_dir: Path, tmp_path
) -> None:
    pytest.importorskip("vllm")
    from serving.http.openai_http import OpenAIBackend
    from serving.http.server import start_server

    req = two_image_request(json_schema=SCHEMA)
    spec = tiny_vl_registry.get("tiny-qwen3-vl")
    with start_server(spec, log_path=tmp_path / "serve.log", api_key="k", ready_timeout_s=600) as server:
        client = OpenAIBackend(server.base_url, registry=tiny_vl_registry, api_key="k", max_retries=1)
        try:
            out = client.chat([req, two_image_request()])
        finally:
            client.close()
    _check_vl_results(out, tiny_vl_model_dir, req)
