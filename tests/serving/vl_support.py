"""Images for the VL tests: small PNGs as data: URLs, and the prompt the HF processor builds."""

from __future__ import annotations

import base64
import io
from pathlib import Path

from serving.chat.types import ChatRequest

# (width, height, colour): one smaller than Qwen3-VL's minimum area (resized up), one wide
SIZES = ((48, 40, "red"), (300, 200, "navy"))


def png_url(width: int, height: int, colour: str) -> str:
    from PIL import Image, ImageDraw

    img = Image.new("RGB", (width, height), colour)
    ImageDraw.Draw(img).line((0, 0, width - 1, height - 1), fill="white", width=3)
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def decode(url: str):
    from PIL import Image

    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB")


def hf_prompt_ids(model_dir: Path, req: ChatRequest) -> list[int]:
    """The prompt token ids of ``req`` as transformers' Qwen3-VL processor builds them."""
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(model_dir)
    messages = [m.to_openai() for m in req.messages]
    text = processor.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    images = [decode(u) for m in req.messages for u in m.images]
    batch = processor(text=[text], images=images, return_tensors="pt")
    return batch["input_ids"][0].tolist()
