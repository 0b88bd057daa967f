"""Server-default sampling (Moira Appendix C) on the real engine with the tiny Qwen3, whose model
folder gets a generation_config.json with non-default sampling values: a reproduction config's
requests carry no sampling field the config did not set (in process and over HTTP); the engine
applies the model's generation config (vLLM ``generation_config="auto"``), read back from the
engine and visible in its replies; an experiment's manifest lists the effective values per call
type. The same requests on an engine with ``generation_config="vllm"`` sample differently
(``slow``): the generation config, not chance, made them greedy."""

from __future__ import annotations

import dataclasses
import json

import pytest
from moira_support import TINY_PROMPT, small_config, small_store

from agent.pairs.experiment.matrix_config import parse_matrix
from agent.pairs.experiment.run import run_experiment
from agent.pairs.moira import calls
from agent.reproduce.moira.run import with_baselines
from agent.reproduce.spec import load_repro
from serving.chat.types import ChatRequest, Message, Sampling
from serving.engines.vllm_engine import EngineOptions
from serving.http.openai_http import OpenAIBackend
from serving.http.server import serve_args
from serving.models.registry import default_registry
from serving.open import BackendSpec, model_facts, open_backend


@pytest.fixture(scope="module")
def gen_registry(alt_engine):
    """The tiny Qwen3 whose folder's generation config has non-default sampling values."""
    return alt_engine.registry


@pytest.fixture(scope="module")
def generation(alt_engine) -> dict:
    """The non-default sampling values of that generation config."""
    return alt_engine.generation


def _engine(registry, generation_config: str):
    pytest.importorskip("vllm")
    opts = EngineOptions(kv_cache_gib=1, max_num_seqs=16, generation_config=generation_config)
    return open_backend(BackendSpec("vllm", "tiny-qwen3", engine=opts), registry)


@pytest.fixture(scope="module")
def auto_backend(alt_engine):
    """The session's second engine (tests/conftest.py ``alt_engine``): it applies the model's
    generation config (``generation_config="auto"``); shared with the thinking tests."""
    return alt_engine.backend


def _repro_cells():
    """The experiments of the shipped Table 3 reproduction config, as `localfin reproduce`
    expands them (its baselines merged in)."""
    cfg = load_repro("moira_table3_main")
    doc, _ = with_baselines(cfg.document, cfg.baselines)
    return parse_matrix(doc, base_dir=cfg.source.parent).cells()


#: A bounded JSON reply: guided decoding keeps a random model from ending at once, so the
#: replies have text whose sampling can differ.
SCHEMA = {
    "type": "object",
    "properties": {"word": {"type": "string", "maxLength": 24}},
    "required": ["word"],
    "additionalProperties": False,
}


def _requests(sampling: Sampling, seeds=(0, 1, 2, 3)) -> list[ChatRequest]:
    out = []
    for s in seeds:
        fields = {**sampling.request_fields(), "seed": s}
        msg = (Message("user", "Name the pair trade of today in one word."),)
        out.append(
            ChatRequest("tiny-qwen3", msg, max_tokens=48, json_schema=SCHEMA, call_type="chat", **fields)
        )
    return out


def test_a_reproduction_request_carries_no_sampling_field_the_config_did_not_set():
    cells = _repro_cells()
    cell = cells[0]
    m = cell.config.model
    assert m.server_default and m.temperature is None and m.top_p is None and m.repetition_penalty is None
    settings = calls.CallSettings(m.backbone, m.sampling(7), m.max_tokens, cell.config.prompt)
    req = calls.direction_request(settings, {"current_step": "step 002"}, [], [], [])
    assert (req.temperature, req.top_p, req.repetition_penalty, req.seed) == (None, None, None, 7)
    assert req.max_tokens == 16384
    # over HTTP: nothing the config did not set is sent; the seed is
    reg = default_registry()
    body = OpenAIBackend("http://127.0.0.1:1/v1", registry=reg)._body(req, reg.get(m.backbone))
    assert not {"temperature", "top_p", "top_k", "repetition_penalty"} & set(body) and body["seed"] == 7
    # FinMem's fixed backbone samples the same way, in the experiments of that backbone only
    fm = cell.config.baselines.finmem
    assert fm.server_default and fm.temperature is None and fm.max_tokens_decision == 16384
    assert [c.backbone.key for c in cells if "finmem" in c.config.baselines.methods] == [fm.model]
    assert cell.config.no_beta_legs == "equal_shares" and cell.config.prompt.news_token_budget > 0
    # and vllm serve is started with the model's generation config
    args = serve_args(reg.get(m.backbone))
    assert args[args.index("--generation-config") + 1] == "auto"


def test_the_engine_applies_the_model_generation_config(auto_backend, generation):
    server = _requests(Sampling(server_default=True))
    # before the engine starts: what the model folder says; after: what the engine reports
    before = auto_backend.effective_sampling(server[0])
    results = auto_backend.chat(server)
    after = auto_backend.effective_sampling(server[0])
    for eff in (before, after):
        assert {k: eff[k] for k in generation} == generation
        assert eff["min_p"] == 0.0 and eff["seed"] == 0 and eff["max_tokens"] == 48
    assert {k: auto_backend.sampling_defaults()[k] for k in generation} == generation  # read from vLLM
    # top_k 1 from the model's config: every seed gives the greedy reply
    texts = [r.text for r in results]
    assert len(set(texts)) == 1 and texts[0].startswith('{"word":"') and len(texts[0]) > 12
    greedy = auto_backend.chat([_requests(Sampling(temperature=0.0))[0]])[0].text
    assert greedy == texts[0]
    # a field the request sets wins over the model's config
    explicit = _requests(Sampling(temperature=0.0, top_p=1.0, server_default=True))[0]
    eff = auto_backend.effective_sampling(explicit)
    assert (eff["temperature"], eff["top_p"], eff["top_k"]) == (0.0, 1.0, 1)


def test_the_manifest_lists_the_effective_sampling_per_call_type(
    auto_backend, gen_registry, generation, tmp_path
):
    shape = {
        "experiment": {"exposures": ["no_beta"]},
        "windows": {"train_start": "2015-01-13", "train_end": "2015-01-16", "test_end": "2015-01-23"},
        "model": {"backbone": "tiny-qwen3", "server_default": True},
        "policy": {"max_cycles": 0},
        "prompt": TINY_PROMPT,
        "screen": {"top_k": 3},
    }
    cfg, text = small_config(small_store(), **shape)
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, temperature=None))
    res = run_experiment(
        cfg,
        tmp_path / "e",
        config_text=text,
        backend=auto_backend,
        model=model_facts("tiny-qwen3", gen_registry),
    )
    assert res.model_calls > 3
    sampling = json.loads((tmp_path / "e" / "manifest.json").read_text())["sampling"]
    assert {"pair_selection", "direction"} <= set(sampling)
    for ct, v in sampling.items():
        assert v["requested"]["temperature"] is None and v["requested"]["top_p"] is None, ct
        assert v["requested"]["seeds"] == [0]
        assert {k: v["effective"][k] for k in generation} == generation, ct


@pytest.mark.slow
def test_without_the_generation_config_the_same_requests_sample(gen_registry, auto_backend):
    backend = _engine(gen_registry, "vllm")
    try:
        reqs = _requests(Sampling(server_default=True), seeds=range(6))
        eff = backend.effective_sampling(reqs[0])
        assert (eff["temperature"], eff["top_p"], eff["top_k"], eff["repetition_penalty"]) == (
            1.0,
            1.0,
            0,
            1.0,
        )
        texts = [r.text for r in backend.chat(reqs)]
        assert len(set(texts)) > 1  # temperature 1, no top_k: the seeds differ
    finally:
        backend.close()
