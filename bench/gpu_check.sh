#!/usr/bin/env bash
# GPU machine check (see bench/gpu_check.py): transformers generation on random-weight Qwen3-4B
# and Llama-3.1-8B shapes (batch sweep), then the kernels and the bank on the machine's CPUs.
# Uses only PyTorch, transformers, numba and numpy already installed there; downloads nothing.
# One call, under 10 minutes; JSON lines on stdout and in $OUT/gpu_check.jsonl (OUT: default .).
#
#   bash bench/gpu_check.sh            # on the lent GPU machine
#   bash bench/gpu_check.sh --tiny     # anywhere: tiny shapes on CPU, seconds
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY="${PYTHON:-$(command -v python3 || command -v python)}"
OUT="${OUT:-.}"
mkdir -p "$OUT"
"$PY" -c "import torch, transformers, numba, numpy" >/dev/null
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader >&2 2>/dev/null || true
# 570 s: the run tool allows 600 s per call; a hung step must still leave the lines written so far
timeout 570 "$PY" -m bench.gpu_check "$@" | tee "$OUT/gpu_check.jsonl"
