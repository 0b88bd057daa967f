#!/usr/bin/env bash
# GPU machine check (see bench/suite/gpu_check.py): where vLLM is installed, `localfin gpu-check`
# (the engine path on tiny models); then transformers generation on random-weight Qwen3-4B and
# Llama-3.1-8B shapes (batch sweep), the kernels and the bank on the machine's CPUs.
# Needs PyTorch, transformers, numba and numpy (and vLLM for the first part); downloads nothing.
# One call, under 10 minutes; JSON lines on stdout and in $OUT/gpu_check.jsonl (OUT: default .).
#
#   bash bench/suite/gpu_check.sh            # on the lent GPU machine
#   bash bench/suite/gpu_check.sh --tiny     # anywhere: tiny shapes on CPU, seconds
#
# vLLM serving figures comparable with published vLLM numbers need a workstation with vLLM and
# a checkpoint (docs/benchmarks.md, "Serving (vLLM's benchmark)"): serve, export the agents'
# journaled prompts, then run vLLM's own benchmark and ours on them:
#   localfin serve qwen3-4b &                      # vllm serve /models/Qwen3-4B ... on :8000
#   localfin bench vllm-serve --journal RUN_DIR --out runs/vllm-serve --model qwen3-4b \
#       --base-url http://127.0.0.1:8000/v1 --rates 2,8 --max-concurrency 64
#   # vLLM's benchmark alone on the exported dataset (the command the line above runs per point):
#   vllm bench serve --backend openai --base-url http://127.0.0.1:8000 --endpoint /v1/completions \
#       --model qwen3-4b --tokenizer /models/Qwen3-4B --dataset-name custom \
#       --dataset-path runs/vllm-serve/agents.jsonl --disable-shuffle --skip-chat-template \
#       --custom-output-len -1 --ignore-eos --temperature 0 --request-rate 8 \
#       --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 --save-result
set -euo pipefail
cd "$(dirname "$0")/../.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY="${PYTHON:-$(command -v python3 || command -v python)}"
OUT="${OUT:-.}"
mkdir -p "$OUT"
"$PY" -c "import torch, transformers, numba, numpy" >/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 2>/dev/null || true
BUDGET=()
if "$PY" -c "import vllm" >/dev/null 2>&1; then
  # the engine path first (localfin gpu-check: tiny models, about 3 minutes; its report in
  # $OUT/gpu-check/gpu_check.json); the sweeps then get what is left of the 10 minutes
  timeout 300 "$PY" -m localfin_cli.main gpu-check --out "$OUT/gpu-check" >&2 || echo "gpu-check failed (see above)" >&2
  BUDGET=(--budget 150)
fi
# 570 s: the run tool allows 600 s per call; a hung step must still leave the lines written so far
timeout 570 "$PY" -m bench.suite.gpu_check "${BUDGET[@]}" "$@" | tee "$OUT/gpu_check.jsonl"
