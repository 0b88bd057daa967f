"""transformers must never take our top-level ``kernels`` package for Hugging Face's kernels hub.

transformers 5.19 decides through ``utils.import_utils.is_kernels_available``:
``importlib.util.find_spec("kernels")`` (which finds ours whenever the repo is importable), then a
version from distribution metadata (``packages_distributions()`` maps ``kernels`` to the
``localfin`` distribution in an editable install, so it reads localfin's version), and without
metadata it imports the package and reads ``__version__``. The hub counts as available only for a
version in ``[KERNELS_MIN_VERSION, KERNELS_MAX_VERSION)``; ``integrations.hub_kernels`` then does
``from kernels import LayerRepository, ...`` and the GGUF quantizer asks it for kernels.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

transformers = pytest.importorskip("transformers")

REPO_ROOT = Path(__file__).resolve().parents[2]


def _in_hub_range(version_text: str) -> bool:
    from packaging import version
    from transformers.utils.import_utils import KERNELS_MAX_VERSION, KERNELS_MIN_VERSION

    parsed = version.parse(version_text)
    return version.parse(KERNELS_MIN_VERSION) <= parsed < version.parse(KERNELS_MAX_VERSION)


def test_our_kernels_package_is_found_but_not_taken_for_the_hub() -> None:
    import importlib.util

    from transformers.integrations import hub_kernels
    from transformers.utils import import_utils

    spec = importlib.util.find_spec("kernels")
    assert spec is not None and spec.origin is not None
    assert Path(spec.origin).resolve() == REPO_ROOT / "kernels" / "__init__.py"
    found, version_text = import_utils._is_package_available("kernels", return_version=True)
    assert found  # the probe does see our package ...
    assert version_text == "N/A" or not _in_hub_range(version_text)  # ... at a non-hub version
    assert import_utils.is_kernels_available() is False
    # the module fell back to its own stubs instead of `from kernels import ...`
    assert hub_kernels._kernels_enabled is False
    assert hub_kernels.LayerRepository.__module__ == hub_kernels.__name__
    with pytest.raises(ImportError):
        hub_kernels.get_kernel("ggml-org/ggml-quantization", version=1)


def test_hub_stays_unavailable_without_distribution_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A plain checkout on sys.path (no editable install) has no metadata naming `kernels`:
    # transformers then imports our package and reads `__version__`, which we do not define.
    from transformers.utils import import_utils

    monkeypatch.setitem(import_utils.PACKAGE_DISTRIBUTION_MAPPING, "kernels", [])
    import_utils.is_kernels_available.cache_clear()
    try:
        found, version_text = import_utils._is_package_available("kernels", return_version=True)
        available = import_utils.is_kernels_available()
    finally:
        import_utils.is_kernels_available.cache_clear()
    assert found
    assert version_text == "N/A"
    assert available is False


_CHILD = """
import importlib.util, json, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from transformers.integrations import hub_kernels
from transformers.utils.import_utils import is_kernels_available

path = sys.argv[1]
tok = AutoTokenizer.from_pretrained(path)
model = AutoModelForCausalLM.from_pretrained(path)
batch = tok("hello world", return_tensors="pt")
with torch.no_grad():
    out = model.generate(**batch, max_new_tokens=3, min_new_tokens=3, do_sample=False)
print(json.dumps({
    "origin": importlib.util.find_spec("kernels").origin,
    "available": is_kernels_available(),
    "hub_enabled": hub_kernels._kernels_enabled,
    "layer_repo_module": hub_kernels.LayerRepository.__module__,
    "imported": sorted(m for m in sys.modules if m == "kernels" or m.startswith("kernels.")),
    "new_tokens": int(out.shape[1] - batch["input_ids"].shape[1]),
}))
"""


def test_loading_and_generating_never_touch_our_kernels(tmp_path: Path) -> None:
    from serving.models.prepare import build_tiny_model

    model_dir = build_tiny_model(tmp_path / "tiny", arch="qwen3")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(model_dir)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert Path(report["origin"]).resolve() == REPO_ROOT / "kernels" / "__init__.py"
    assert report["available"] is False
    assert report["hub_enabled"] is False
    assert report["layer_repo_module"] == "transformers.integrations.hub_kernels"
    assert report["imported"] == []  # our package was never even imported, so never called
    assert report["new_tokens"] == 3
