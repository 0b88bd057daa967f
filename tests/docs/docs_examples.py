"""The code blocks of the README and the documentation pages, as the docs-examples test runs them
(not a test module): every shell command of a ``bash`` block and every ``python`` block, in page
order, each with the tier it runs in and, for those it does not run, the reason.

- A ``bash`` block is split into commands: one per line, a line ending in ``\\`` joined to the
  next, a line that is only a comment dropped. ``export X=...``, ``X=$(...)`` and ``. activate``
  lines set the shell state of the commands after them on the page (the *prelude*); a command
  ending in ``&`` starts in the background and is stopped when the page is done.
- A ``python`` or ``toml`` block whose first line is a comment naming a file (``# models.toml``,
  ``# my-plugin/my_plugin/bands.py``) is a file the page has you write: it is written into the
  page's folder before its commands run (a Python one is also compiled). Any other ``python``
  block is a script, run in the page's folder.

Tiers (:data:`RULES`, first match wins; anything no rule names runs in the default suite):

- ``run``: cheap, in the default suite;
- ``slow``: starts an engine or a long computation (the demo, an experiment, a sweep over real
  data, the CPU rehearsal, a page's ``pytest`` commands): marked ``slow``;
- ``gpu``: needs a CUDA GPU, a GPU model's weights or a cluster of GPU machines: skipped, with the
  reason;
- ``skip``: cannot run here, with the reason: a ``make`` target (it installs the environment the
  suite runs in, or runs the suite itself), a command of a plugin of your own whose distribution
  the page does not give, a file the page describes in words only.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ROOT",
    "PAGES",
    "Example",
    "examples",
    "page_files",
    "strip_comment",
    "RULES",
    "classify",
    "expected_code",
    "EXPECTED_CODES",
    "TIMEOUT_S",
    "base_env",
    "run_group",
]

ROOT = Path(__file__).resolve().parents[2]
#: the longest a command may take (the demo, an experiment of the demo's size on the CPU)
TIMEOUT_S = {"run": 300, "slow": 3600}

#: the pages, in the order a reader meets them (the README first); generated pages hold no command
PAGES: tuple[str, ...] = (
    "README.md",
    *sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "docs").glob("*.md")
        if p.name not in ("moira_prompt_checklist.md",)
    ),
)

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[a-z]*)\n(?P<body>.*?)^(?P=indent)```", re.S | re.M)
_FILE = re.compile(r"#\s*(?P<path>[\w./-]+\.(?:py|toml))\s*$")


@dataclass(frozen=True)
class Example:
    """One command or Python block: its page and line, its kind (``sh``, ``state``, ``bg``,
    ``py``, ``file``), its text, and for a file the path it is written to."""

    page: str
    line: int
    kind: str
    text: str
    path: str = ""

    @property
    def id(self) -> str:
        head = " ".join(self.text.split())[:70] if self.kind != "file" else f"writes {self.path}"
        return f"{self.page}:{self.line} {head}"


def _blocks(page: str) -> list[tuple[int, str, str]]:
    text = (ROOT / page).read_text(encoding="utf-8")
    out = []
    for m in _FENCE.finditer(text):
        indent = len(m["indent"])
        body = "\n".join(line[indent:] for line in m["body"].splitlines())
        out.append((text[: m.start()].count("\n") + 2, m["lang"], body))
    return out


def _commands(line0: int, body: str) -> list[tuple[int, str]]:
    out, buf, start = [], "", line0
    for k, raw in enumerate(body.splitlines()):
        line = raw.rstrip()
        if not buf:
            start = line0 + k
            if not line.strip() or line.lstrip().startswith("#"):
                continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        out.append((start, (buf + line).strip()))
        buf = ""
    return out


def strip_comment(command: str) -> str:
    """``command`` without its trailing shell comment (a ``#`` after a blank, outside quotes)."""
    quote = ""
    for k, c in enumerate(command):
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == "#" and (k == 0 or command[k - 1].isspace()):
            return command[:k].rstrip()
    return command.rstrip()


def _kind(command: str) -> str:
    bare = strip_comment(command).strip()
    assignment = r"(export\s+)?[A-Z_][A-Z0-9_]*=(\$\(.*\)|[^\s$]+)"
    if re.fullmatch(assignment, bare) or bare.startswith((". ", "source ")):
        return "state"
    return "bg" if bare.endswith("&") else "sh"


def examples(pages: tuple[str, ...] = PAGES) -> list[Example]:
    """Every example of ``pages``, in order."""
    out = []
    for page in pages:
        for line, lang, body in _blocks(page):
            first = body.splitlines()[0] if body.strip() else ""
            named = _FILE.fullmatch(first.strip())
            if lang in ("python", "toml") and named:
                out.append(Example(page, line, "file", body, named["path"]))
            elif lang == "python":
                out.append(Example(page, line, "py", body))
            elif lang == "bash":
                out += [Example(page, n, _kind(c), c) for n, c in _commands(line, body)]
    return out


def page_files(page: str) -> list[Example]:
    """The files ``page`` has you write (its named ``toml`` and ``python`` blocks)."""
    return [e for e in examples((page,)) if e.kind == "file"]


_GPU = "needs a CUDA GPU"

#: (pattern searched in the command or block, tier, reason); the first match wins
RULES: tuple[tuple[str, str, str], ...] = (
    # the environment and the suite itself
    (r"^make (install-gpu)\b", "gpu", f"{_GPU}: installs the CUDA build of vLLM"),
    (
        r"^make\b",
        "skip",
        "a make target: it installs the environment this suite runs in (make install) or "
        "runs the suite itself (make test, make demo's parts run below); the suite never runs make",
    ),
    (r"python -m pytest\b", "slow", "runs tests of this suite (in the page's clone, as a user does)"),
    # GPU machines: engines, servers and clusters of GPU models
    (r"localfin gpu-check\b", "gpu", f"{_GPU}: checks the engine path on this machine's GPUs"),
    (r"CUDA_VISIBLE_DEVICES=|^vllm serve\b", "gpu", f"{_GPU}: serves a GPU model"),
    (
        r"localfin serve (?!smollm2-135m)\S+(?! --dry-run)(?!.*--dry-run)",
        "gpu",
        f"{_GPU}: serves a GPU model",
    ),
    (
        r"--ray auto|HEAD_IP|ray start --head --port=6379|qwen3-vl-8b=http",
        "gpu",
        f"{_GPU}: a Ray cluster of GPU machines",
    ),
    (
        r"--model (qwen3|llama)|--judge (qwen3|llama)|--tokenizer /models/|--model my-model|chat qwen3",
        "gpu",
        f"{_GPU}: a GPU model's weights",
    ),
    (r"localfin reproduce run (?!.*--dry-run)", "gpu", f"{_GPU}: runs a paper's table at full size"),
    (r"localfin reproduce serve (?!.*--dry-run)", "gpu", f"{_GPU}: starts a node's servers of GPU models"),
    (
        r"--config staples\.toml|--config matrix\.toml --out|report runs/matrix|report runs/staples",
        "gpu",
        f"{_GPU}: the guide's experiment runs on qwen3-4b (and the matrix on GPU backbones)",
    ),
    (r"--models-file models\.toml (serve|pairs run)", "gpu", f"{_GPU}: the models file's checkpoints"),
    (r'BackendSpec\("vllm", "qwen3', "gpu", f"{_GPU}: an engine of qwen3-4b"),
    # a plugin of your own whose distribution the page does not give
    (
        r"--dataset my_qa",
        "skip",
        "the dataset and tool of a plugin of your own: the section shows their "
        "modules, not a distribution with their entry points",
    ),
    (
        r"--config short\.toml",
        "skip",
        "short.toml is described in words (moira_table3_main with its windows cut), not given as a file",
    ),
    (
        r"--finmem-code FINMEM",
        "skip",
        "FINMEM is a checkout of FinMem's code, which localfin never ships nor fetches",
    ),
    # long: an engine on the CPU, an experiment, a sweep over real data, the rehearsal
    (r"localfin demo\b|localfin pairs demo\b|localfin qa demo\b", "slow", "the CPU demo (an engine)"),
    (r"localfin chat smollm2|localfin serve smollm2", "slow", "starts the CPU engine"),
    (r"localfin pairs run --config my\.toml --check", "run", ""),
    (
        r"localfin pairs run\b|api\.run_experiment|api\.backend\(",
        "slow",
        "a Moira experiment on the CPU engine",
    ),
    (
        r"localfin (report|audit) (runs|reports)/(demo|mine|from-python)|examples/equity_curve\.py|"
        r"api\.load_runs",
        "slow",
        "reads the experiment or demo run above",
    ),
    (
        r"localfin qa eval\b|ray start|ray stop|localfin qa demo-set",
        "slow",
        "FinAcumen on the CPU engine (and a local Ray cluster)",
    ),
    (r"localfin reproduce (smoke|rehearse)\b", "slow", "every engine setting of a config on tiny stand-ins"),
    (
        r"localfin bench (vllm-serve|tokens|kernels|moira-lockstep|moira-news-share)\b",
        "slow",
        "a benchmark (minutes)",
    ),
    (r"screen-sweep|lifecycle-sweep", "slow", "a sweep over twenty years of real prices"),
    (r"staples_energy_daily_2003_2023", "slow", "imports twenty years of real prices"),
    (r"pip install", "slow", "installs a plugin (into a throwaway folder) and runs it"),
    (r"localfin_example_plugin", "slow", "reads the plugin installed above"),
    (r"localfin plugins list|localfin pairs baselines|run_baseline\(", "slow", "the plugin installed above"),
    (r"localfin pairs matrix\b", "run", ""),
)

#: exit codes other than 0 that a page documents for a command (pattern -> code)
EXPECTED_CODES: tuple[tuple[str, int], ...] = (
    (r"localfin reproduce check\b", 1),  # "exit 1 if anything is missing": no GPU, data or weights here
)


def classify(example: Example) -> tuple[str, str]:
    """(tier, reason) of ``example`` (:data:`RULES`; a file is always written: ``run``)."""
    if example.kind == "file":
        return "run", ""
    text = " ".join(example.text.split())
    for pattern, tier, reason in RULES:
        if re.search(pattern, text, re.M):
            return tier, reason
    return "run", ""


def expected_code(example: Example) -> int:
    text = " ".join(example.text.split())
    return next((code for pattern, code in EXPECTED_CODES if re.search(pattern, text)), 0)


def base_env(home: Path) -> dict[str, str]:
    """The environment of a page's commands: localfin's virtual environment first on ``PATH``,
    this checkout on ``PYTHONPATH``, offline, localfin's folders under ``home`` (the prepared CPU
    model where it is; no GPU checkpoint)."""
    from localfin import env

    base = {k: v for k, v in os.environ.items() if not k.startswith(("LOCALFIN_", "VIRTUAL_ENV"))}
    base.update(
        PATH=f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        PYTHONPATH=str(ROOT),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        ORT_DISABLE_TELEMETRY="1",
        NO_MKDOCS_2_WARNING="1",
        LOCALFIN_HOME=str(home / ".localfin"),
        LOCALFIN_MODEL_CACHE=str(env.model_cache_dir()),  # the prepared CPU model
        LOCALFIN_MODELS_DIR=str(home / "models"),  # no GPU checkpoint here
        COLUMNS="120",
    )
    return base


def run_group(
    args: list[str], *, cwd: Path, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run`` in a process group of its own, the whole group killed when it runs past
    ``timeout`` or the test is stopped (an engine a command started never outlives the test)."""
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n(killed after {timeout:.0f} s)"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return subprocess.CompletedProcess(args, proc.returncode, out, err)
