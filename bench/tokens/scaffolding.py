"""The fixed text of FinMem's decision prompt: ours (``agent/prompts/pairs_finmem_decision.yaml``)
beside FinMem's own, counted with each backbone's tokenizer.

Ours: the system prompt as a run renders it, without its variable parts (no company lines; every
layer's allowed ids left empty): the memory layers, how to read news sentiment and the reports,
what momentum means, the character, the actions and the output format naming each layer's ids.

Theirs: read at run time from a user's checkout of FinMem's code (``--finmem-code DIR``, the
pinned commit), never stored here: the string constants its test decision prompt is built from,
``puppy/prompts.py`` (the decision instruction, the ticker line, the sentiment and momentum
explanations, the field descriptions of the output schema and the per-layer memory-id requests,
one per layer) and the fixed lines ``puppy/reflection.py`` adds (the four layer headers and the
momentum sentence). What the guard library (guardrails) then adds to FinMem's prompt, its JSON
suffix and the XML rendering of the output schema, is not in FinMem's repository and is not
counted: FinMem's fixed text is larger than this count.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from localfin.errors import ConfigError

__all__ = ["LAYERS", "ours", "theirs", "scaffolding_counts"]

LAYERS = ("short", "mid", "long", "reflection")
#: puppy/prompts.py constants the test decision prompt uses (the training ones are left out)
_TEST_NAMES = (
    "test_prompt",
    "test_investment_info_prefix",
    "test_sentiment_explanation",
    "test_momentum_explanation",
    "test_invest_action_choice",
    "test_trade_reason_summary",
    "short_memory_id_desc",
    "mid_memory_id_desc",
    "long_memory_id_desc",
    "reflection_memory_id_desc",
)
#: puppy/reflection.py functions whose string constants are fixed lines of the test prompt
_TEST_FUNCS = ("_test_response_model_invest_info", "_add_momentum_info")


def ours() -> str:
    """Our decision prompt's fixed text (module docstring)."""
    from agent.pairs.baselines.finmem.calls import _allowed
    from agent.prompting import load_prompt

    p = load_prompt("pairs_finmem_decision")
    system, _user = p.render(
        character="risk_seeking", adaptive=True, company_lines=[], payload="", allowed=_allowed({})
    )
    return system


def _constants(path: Path) -> dict[str, str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        if (
            isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            out[node.targets[0].id] = node.value.value
    return out


def _function_strings(path: Path, names: tuple[str, ...]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name in names:
            for sub in ast.walk(node):
                if (
                    isinstance(sub, ast.Constant)
                    and isinstance(sub.value, str)
                    and len(sub.value.strip()) > 2
                ) and (sub.value.startswith("The ") or sub.value.startswith("\n")):
                    out.append(sub.value)
    return out


def theirs(checkout: str | Path) -> str:
    """FinMem's fixed decision-prompt text from a checkout (module docstring)."""
    root = Path(checkout).expanduser()
    prompts, reflection = root / "puppy" / "prompts.py", root / "puppy" / "reflection.py"
    if not prompts.is_file() or not reflection.is_file():
        raise ConfigError(
            f"--finmem-code {str(checkout)!r}: no puppy/prompts.py and puppy/reflection.py there; allowed: a "
            "checkout of FinMem's code (pipiku915/FinMem-LLM-StockTrading)"
        )
    c = _constants(prompts)
    missing = [n for n in (*_TEST_NAMES, "test_memory_id_extract_prompt") if n not in c]
    if missing:
        raise ConfigError(f"--finmem-code {str(checkout)!r}: puppy/prompts.py lacks {', '.join(missing)}")
    parts = [c[n] for n in _TEST_NAMES]
    parts += [c["test_memory_id_extract_prompt"].format(memory_layer=f"{layer}-level") for layer in LAYERS]
    parts += _function_strings(reflection, _TEST_FUNCS[0])  # the four layer headers
    parts += _function_strings(reflection, _TEST_FUNCS[1])[:1]  # one momentum sentence a prompt
    return "\n".join(
        p.replace("${investment_info}", "").replace("${gr.complete_json_suffix_v2}", "") for p in parts
    )


def scaffolding_counts(counters: Mapping[str, Any], checkout: str | Path | None) -> dict[str, dict[str, int]]:
    """Per tokenizer name, the tokens of our fixed text and (with ``checkout``) FinMem's."""
    mine = ours()
    other = theirs(checkout) if checkout else None
    out = {}
    for name, c in counters.items():
        row = {"ours": c.count_text(mine) - 1, "ours_chars": len(mine)}
        if other is not None:
            row |= {"finmem": c.count_text(other) - 1, "finmem_chars": len(other)}
        out[name] = row
    return out
