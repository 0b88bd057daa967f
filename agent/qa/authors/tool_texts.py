"""The authors' tools as their agent offers them, and what it shows of each call, rebuilt from
their texts (:class:`agent.qa.authors.checkout.AuthorsCode`).

- :func:`tool_specs`: the native tool specs (``ft/tool/*.py``: each tool's name, description and
  parameter schema, in their order: ``python_execute``, ``financial_data_lookup``,
  ``ocr_extract``, ``terminate``), for the tools a question gets.
- :func:`observation`: what their loop writes into the tool message (``ft/agent/toolcall.py``
  ``execute_tool``): the output under its header, or the no-output line; an unknown tool, bad
  JSON arguments or a failing tool give their error lines; the whole is cut to the observation
  bound (``max_observe``).
- :func:`python_output`, :func:`ocr_output`: a call's result as their tools return it, a Python
  ``dict`` written out by ``str`` (``{'observation': ..., 'success': ...}``; the OCR tool's
  ``success``, ``text``, ``markdown``, ``regions`` or ``results``), from our tools' outputs.
- :func:`policy_suffix`: the note their loop adds to the policy message when one or two steps
  are left (kept for every later step, as theirs accumulates).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent.qa.authors.checkout import AuthorsCode

__all__ = [
    "AUTHORS_TOOLS",
    "TERMINATE",
    "tool_specs",
    "observation",
    "python_output",
    "ocr_output",
    "policy_suffix",
    "lookup_hints",
]

#: their tool names, in their order, and the text names of each spec
AUTHORS_TOOLS = ("python_execute", "financial_data_lookup", "ocr_extract", "terminate")
TERMINATE = "terminate"
_SPEC = {
    "python_execute": "tool.python",
    "financial_data_lookup": "tool.lookup",
    "ocr_extract": "tool.ocr",
    "terminate": "tool.terminate",
}


def tool_specs(code: AuthorsCode, names: Sequence[str]) -> tuple[dict[str, Any], ...]:
    """The specs of ``names`` (a subset of :data:`AUTHORS_TOOLS`, put in their order)."""
    bad = [n for n in names if n not in _SPEC]
    if bad:
        raise ValueError(f"authors' tools {bad}; allowed: {', '.join(AUTHORS_TOOLS)}")
    return tuple(
        {
            "type": "function",
            "function": {
                "name": n,
                "description": code.text(f"{_SPEC[n]}.description"),
                "parameters": code.table(f"{_SPEC[n]}.parameters"),
            },
        }
        for n in AUTHORS_TOOLS
        if n in names
    )


def observation(code: AuthorsCode, name: str, result: str, *, limit: int) -> str:
    """The tool message of a call of ``name`` that returned ``result`` (its ``str``)."""
    text = code.render("tool.observed", name=name, result=result) if result else code.render(
        "tool.no_output", name=name
    )  # fmt: skip
    return text[:limit] if limit else text


def unknown_tool(code: AuthorsCode, name: str, *, limit: int) -> str:
    return code.render("tool.unknown", name=name)[:limit]


def bad_arguments(code: AuthorsCode, name: str, *, limit: int) -> str:
    return code.render("tool.error", error_msg=code.render("tool.bad_json", name=name))[:limit]


def tool_failed(code: AuthorsCode, name: str, error: str, *, limit: int) -> str:
    return code.render("tool.error", error_msg=code.render("tool.crash", name=name, e=error))[:limit]


def python_output(code: AuthorsCode, source: str, text: str, ok: bool) -> str:
    """Their Python tool's result for ``source`` whose run printed ``text`` (``ok``: it ran
    without an error): no code gives their missing-code message; printing nothing where the
    code calls ``print`` gives their empty-output message (and ``success`` False)."""
    if not source.strip():
        return str({"observation": code.text("tool.python.no_code"), "success": False})
    if ok and not text.strip() and "print" in source.lower():
        return str({"observation": code.text("tool.python.empty_output"), "success": False})
    return str({"observation": text, "success": ok})


def ocr_output(code: AuthorsCode, transcriptions: Sequence[str]) -> str:
    """Their OCR tool's result over the step's images (one, several or none)."""
    if not transcriptions:
        return str({"success": False, "error": code.text("tool.ocr.no_image")})
    if len(transcriptions) == 1:
        t = transcriptions[0]
        return str({"success": True, "text": t, "markdown": t, "regions": []})
    results = [{"index": i, "text": t, "markdown": t, "regions": []} for i, t in enumerate(transcriptions)]
    return str({"success": True, "results": results})


def policy_suffix(code: AuthorsCode, remaining: int) -> str:
    """The note added to the policy message with ``remaining`` steps left ("" for more than 2)."""
    if remaining <= 1:
        return code.render("loop.last_step", remaining=remaining)
    if remaining <= 2:
        return code.render("loop.last_steps", remaining=remaining)
    return ""


def stuck_note(code: AuthorsCode, concluded: bool) -> str:
    """The note their loop puts before the policy message when it sees a reply repeated."""
    return code.text("loop.stuck_conclusion" if concluded else "loop.stuck_repeat")


def with_stuck_note(code: AuthorsCode, note: str, policy: str) -> str:
    return code.render("loop.stuck_join", stuck_prompt=note, **{"#1": policy})


def lookup_hints(code: AuthorsCode) -> Any:
    """The exact-filter lookup's hint sentences in their words
    (:data:`agent.qa.tools.fin_lookup.Hints`)."""

    def hints(kind: str, fields: Any) -> str:
        if kind == "relax":
            return code.text("tool.lookup.relax")
        return code.render(f"tool.lookup.{kind}", **fields)

    return hints


def terminate_output(code: AuthorsCode, arguments: Any) -> str:
    """What their ``terminate`` tool returns for its arguments (its status, its answer)."""
    args = arguments if isinstance(arguments, dict) else {}
    parts = []
    if args.get("status"):
        parts.append(code.render("tool.terminate.status", status=args["status"]))
    if args.get("final_answer"):
        parts.append(code.render("tool.terminate.answer", final_answer=args["final_answer"]))
    if not parts:
        parts.append(code.text("tool.terminate.done"))
    return code.text("tool.terminate.join").join(parts)
