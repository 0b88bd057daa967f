"""OCR by the served vision-language model (``qa.ocr = "model"``): each image goes to the model
with a request to transcribe it (call type ``qa_ocr``, temperature 0, at most 2,000 tokens, as
the authors' OCR tool asks, ``ft/tool/ocr.py``), and its reply is the transcription put before
the loop. With ``authors_prompt`` (the authors' OCR request read from their checkout, ``qa.loop =
"authors"``) the request is theirs: one user message of that text and the image, no system
message. The calls go through their own journal (``journal.sqlite`` in the folder given), so a
rerun replays them; a reply that is cut, an error, or one shorter than 8 characters (the
authors drop such replies as empty) gives an empty transcription, counted in
:attr:`ModelTranscriber.empty`.

:meth:`ModelTranscriber.many` sends every image not yet transcribed in one batch (a run asks
for the images of all its items at once); calling the transcriber on one image sends it alone.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path

from agent.prompting import load_prompt
from serving.backend import Backend
from serving.journal import Journal, JournaledBackend
from serving.types import ChatRequest, Message, image_data_url

__all__ = ["OCR_JOURNAL", "ModelTranscriber"]

log = logging.getLogger(__name__)

OCR_JOURNAL = "journal.sqlite"
_MIN_CHARS = 8
_FENCE = re.compile(r"^```[\w-]*\n?|\n?```$")


class ModelTranscriber:
    """Image transcription by ``model`` on ``backend``, journaled in ``folder``.

    Args:
        backend: serves ``model`` (a model that takes images).
        model: registry key of the vision-language model.
        folder: where the journal of the OCR calls lives.
        max_tokens: completion budget of one transcription (tokens).
        authors_prompt: the authors' OCR request text (None: ours, ``qa_ocr``).
    """

    def __init__(
        self, backend: Backend, model: str, folder: str | Path, *, max_tokens: int = 2000,
        authors_prompt: str | None = None,
    ) -> None:  # fmt: skip
        self.backend, self.model = backend, model
        self.authors_prompt = authors_prompt
        self.folder = Path(folder)
        self.max_tokens = max_tokens
        self.prompt = load_prompt("qa_ocr")
        self.cache: dict[str, str] = {}
        self.empty = 0

    def request(self, path: str) -> ChatRequest:
        if self.authors_prompt is not None:
            msgs: tuple[Message, ...] = (Message("user", self.authors_prompt, (image_data_url(path),)),)
        else:
            system, user = self.prompt.render()
            msgs = (Message("system", system), Message("user", user, (image_data_url(path),)))
        return ChatRequest(
            model=self.model, messages=msgs, max_tokens=self.max_tokens, temperature=0.0, seed=0,
            call_type="qa_ocr",
        )  # fmt: skip

    def many(self, paths: Sequence[str]) -> list[str]:
        """The transcriptions of ``paths`` (one batch for those not yet done)."""
        todo = list(dict.fromkeys(p for p in paths if p not in self.cache))
        if todo:
            self.folder.mkdir(parents=True, exist_ok=True)
            with Journal(self.folder / OCR_JOURNAL, run_id="ocr") as journal:
                results = JournaledBackend(self.backend, journal).chat([self.request(p) for p in todo])
            for p, r in zip(todo, results):
                text = _FENCE.sub("", r.text.strip()).strip() if r.finish_reason == "stop" else ""
                if len(text) < _MIN_CHARS:
                    self.empty += 1
                    log.debug("model OCR of %s gave no usable text (finish %s)", p, r.finish_reason)
                    text = ""
                self.cache[p] = text
        return [self.cache[p] for p in paths]

    def __call__(self, path: str) -> str:
        return self.many([path])[0]
