"""The texts localfin reads from a checkout of the FinAcumen authors' code, pinned to the commit
whose numbers the paper reports: for each, our name, the file, its locator
(:mod:`agent.qa.authors.source`) and the first 16 hex digits of the sha256 of its source text at
that commit. These are facts about their files (where a text is, and a digest that identifies
it); the texts themselves are read at run time and never stored here.

:data:`AUTHORS_FILES` lists the files read; :data:`PINS` the texts, grouped by what uses them:
the system prompts and per-step policy messages of their agents, the observations their loop
writes, their tools' specs and messages, the OCR prefix, the user message (problem block,
format instructions), the Base prompt, the memory block and a memory entry's question, the bank's
grading and summary prompts, and the FinTMMBench judge's prompt.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PINNED_COMMIT", "PINNED_REPOSITORY", "AUTHORS_FILES", "Pin", "PINS", "pin"]

#: the repository and commit the digests below were taken from
PINNED_REPOSITORY = "CamelliaLilium/FinAcumen"
PINNED_COMMIT = "16246593c75e81fac0b57c05e739761dae3e6fe9"


@dataclass(frozen=True)
class Pin:
    """One text: our ``name``, its ``path`` in the checkout, its ``locator`` and ``sha16``
    (the first 16 hex digits of the sha256 of its source text at :data:`PINNED_COMMIT`)."""

    name: str
    path: str
    locator: str
    sha16: str


_F = {
    "_0": "finacumen/fm/collect.py",
    "_1": "finacumen/fm/cross_verify.py",
    "_2": "finacumen/fm/ocr_preprocess.py",
    "_3": "finacumen/fm/retrieve.py",
    "_4": "finacumen/ft/agent/base.py",
    "_5": "finacumen/ft/agent/toolcall.py",
    "_6": "finacumen/ft/eval/fintmm_eval.py",
    "_7": "finacumen/ft/tool/financial_data_lookup.py",
    "_8": "finacumen/ft/tool/ocr.py",
    "_9": "finacumen/ft/tool/python_execute.py",
    "_10": "finacumen/ft/tool/terminate.py",
    "_11": "finacumen/ft/variant/baseline_raw.py",
    "_12": "finacumen/ft/variant/finacumen.py",
    "_13": "finacumen/ft/variant/ft_only.py",
    "_14": "finacumen/fm/pruning_rules.py",
}

#: (name, file key, locator, sha16) of every text read
_ROWS = (
    ("finacumen.system", "_12", "FINACUMEN_SYSTEM_PROMPT", "c59759a8818f91b2"),
    ("finacumen.step2", "_12", "STEP2_TEXTS[B4]", "590e25e3e49198ca"),
    ("finacumen.policy", "_12", "FINACUMEN_NEXT_STEP_PROMPT", "37651cc1b19413b2"),
    ("ft_only.system", "_13", "FT_SYSTEM_PROMPT", "85f80426aeb66e37"),
    ("ft_only.policy", "_13", "FT_NEXT_STEP_PROMPT", "e2b8c44279d99ea4"),
    ("base.system", "_11", "SYSTEM_PROMPT", "fd46f343ac8eb153"),
    ("loop.last_step", "_5", "ToolCallAgent.think#0", "59587fcc9569c821"),
    ("loop.last_steps", "_5", "ToolCallAgent.think#1", "1c908a4018528080"),
    ("loop.no_tool", "_5", "ToolCallAgent.think#25", "702964b97b8517ae"),
    ("loop.snag", "_5", "ToolCallAgent.think#27", "5e293832c27c4222"),
    ("loop.stuck_conclusion", "_4", "BaseAgent.handle_stuck_state#9", "0565b0399c1c4692"),
    ("loop.stuck_repeat", "_4", "BaseAgent.handle_stuck_state#10", "cfe4e8a19eb503c4"),
    ("loop.stuck_join", "_4", "BaseAgent.handle_stuck_state#11", "829f096797170199"),
    ("tool.observed", "_5", "ToolCallAgent.execute_tool#20", "5f42c9cec6dd9be6"),
    ("tool.no_output", "_5", "ToolCallAgent.execute_tool#21", "cf2b62ba0a6020fa"),
    ("tool.unknown", "_5", "ToolCallAgent.execute_tool#1", "e8c763467289dfbd"),
    ("tool.bad_json", "_5", "ToolCallAgent.execute_tool#22", "5864e85dd0231e8e"),
    ("tool.error", "_5", "ToolCallAgent.execute_tool#24", "e37c3d82a5d3c054"),
    ("tool.crash", "_5", "ToolCallAgent.execute_tool#25", "5e87c84596d35195"),
    ("tool.python.description", "_9", "PythonExecute.description", "2ede7e25233cd05c"),
    ("tool.python.parameters", "_9", "PythonExecute.parameters", "acf43d3d55b65381"),
    ("tool.python.no_code", "_9", "PythonExecute.execute#3", "30b7b79da6dd8375"),
    ("tool.python.empty_output", "_9", "PythonExecute._run_code#3", "76659e099d91ff83"),
    ("tool.lookup.description", "_7", "FinancialDataLookup.description", "711f03cc7bf0b16d"),
    ("tool.lookup.parameters", "_7", "FinancialDataLookup.parameters", "5be49c795cc989b5"),
    ("tool.lookup.no_symbol", "_7", "FinancialDataLookup.execute#4", "b58180678020e1eb"),
    ("tool.lookup.unknown_source", "_7", "_ensure_loaded#9", "afdd660a4bc04fc7"),
    ("tool.lookup.date_error", "_7", "FinancialDataLookup.execute#8", "b450204857b9da3d"),
    ("tool.lookup.no_match", "_7", "FinancialDataLookup.execute#14", "3424c19f8a5120e5"),
    ("tool.lookup.symbol", "_7", "FinancialDataLookup.execute#15", "e00a49476d29c218"),
    ("tool.lookup.date", "_7", "FinancialDataLookup.execute#16", "b302bb25dd66f165"),
    ("tool.lookup.indicator", "_7", "FinancialDataLookup.execute#17", "9e1bb1f7add7c178"),
    ("tool.lookup.relax", "_7", "FinancialDataLookup.execute#21", "2f07e0a0ce21c190"),
    ("tool.ocr.description", "_8", "OcrExtract.description", "c2757608f91b22c8"),
    ("tool.ocr.parameters", "_8", "OcrExtract.parameters", "b3996b358d6521e9"),
    ("tool.ocr.prompt", "_8", "OcrExtract._OCR_PROMPT", "942d363069c7579c"),
    ("tool.ocr.no_image", "_8", "OcrExtract.execute#16", "dcb59a04cb4a20a3"),
    ("tool.terminate.description", "_10", "_TERMINATE_DESCRIPTION", "d08fa7d7e1e0377f"),
    ("tool.terminate.parameters", "_10", "Terminate.parameters", "8adec82f85e4426d"),
    ("tool.terminate.status", "_10", "Terminate.execute#0", "8eaef084ecb609d0"),
    ("tool.terminate.answer", "_10", "Terminate.execute#1", "8abe0591f41565bb"),
    ("tool.terminate.done", "_10", "Terminate.execute#2", "ee9fd5f44a87ca68"),
    ("tool.terminate.join", "_10", "Terminate.execute#3", "3956edc141b4bcb7"),
    ("ocr.prefix", "_2", "_OCR_PREFIX", "27eaa5f860632d0d"),
    ("ocr.join", "_2", "preprocess_images#11", "c48ac46fb61a9f35"),
    ("problem.open", "_3", "render_user_message#4", "cedaf1f7da37b033"),
    ("problem.context", "_3", "render_user_message#5", "92a399f66ad7194a"),
    ("problem.options", "_3", "render_user_message#7", "a85338f862a6029d"),
    ("problem.question", "_3", "render_user_message#9", "fae94d24d410691f"),
    ("problem.close", "_3", "render_user_message#10", "758b669c4af15db7"),
    ("instruction.open", "_3", "render_user_message#11", "fb01e5244bad7862"),
    ("instruction.close", "_3", "render_user_message#12", "49c715dcfe65108a"),
    ("base_problem.open", "_3", "render_baseline_message#4", "cedaf1f7da37b033"),
    ("base_problem.context", "_3", "render_baseline_message#5", "92a399f66ad7194a"),
    ("base_problem.options", "_3", "render_baseline_message#7", "a85338f862a6029d"),
    ("base_problem.question", "_3", "render_baseline_message#9", "fae94d24d410691f"),
    ("base_problem.close", "_3", "render_baseline_message#10", "758b669c4af15db7"),
    ("hint.terminate", "_3", "build_instruction#1", "eb3e6b2431c9eef6"),
    ("hint.boolean", "_3", "build_instruction#6", "a9787c194a184911"),
    ("hint.boolean_must", "_3", "build_instruction#7", "c9fa23759347f321"),
    ("hint.letter", "_3", "build_instruction#9", "7577769029ce9a7c"),
    ("hint.letter_must", "_3", "build_instruction#10", "ec6c32fec1a6a9d6"),
    ("hint.letters", "_3", "build_instruction#11", "bbb73e90c8c52303"),
    ("hint.letters_must", "_3", "build_instruction#12", "968e870ac2748a98"),
    ("hint.entity", "_3", "build_instruction#15", "7628f40ba4878bf1"),
    ("hint.entity_must", "_3", "build_instruction#16", "24ab5566be11c716"),
    ("hint.sentence", "_3", "build_instruction#18", "ce21d6b39543a1a1"),
    ("hint.sentence_must", "_3", "build_instruction#19", "2510ea5549de0666"),
    ("hint.count", "_3", "build_instruction#21", "656f470e6dc8dce6"),
    ("hint.count_must", "_3", "build_instruction#22", "2caa1768a9f1e2d5"),
    ("hint.currency", "_3", "build_instruction#24", "f5ac27864c104bb6"),
    ("hint.percent", "_3", "build_instruction#26", "e6fc337b133f9e50"),
    ("hint.magnitude", "_3", "build_instruction#33", "2444eb068d319de7"),
    ("hint.bps", "_3", "build_instruction#36", "df0cbcb144058705"),
    ("hint.answer_must", "_3", "build_instruction#37", "c9fa23759347f321"),
    ("hint.currencies", "_3", "_CURRENCY_MAP", "9b22c62498ad5095"),
    ("hint.text", "_3", "_detect_precision#1", "8bb21f9989cff593"),
    ("hint.rounded", "_3", "_detect_precision#16", "cf3b359900c717b1"),
    ("hint.integer", "_3", "_detect_precision#17", "29050d8c27a80dcf"),
    ("memory.open", "_3", "render_memory_block#29", "480f285c135e706b"),
    ("memory.guide_open", "_3", "render_memory_block#30", "2dc6f4a1f5939c07"),
    ("memory.guide_line", "_3", "render_memory_block#31", "f9a5a678970a362d"),
    ("memory.guide_close", "_3", "render_memory_block#32", "606e5d28a5171915"),
    ("memory.guide_e0", "_3", "render_memory_block#22", "9e34894644985b98"),
    ("memory.guide_e1", "_3", "render_memory_block#23", "0c7f68fbe1915a53"),
    ("memory.guide_e2", "_3", "render_memory_block#24", "01d07297c8e41b0a"),
    ("memory.guide_e3", "_3", "render_memory_block#25", "654363601fbef5fa"),
    ("memory.guide_e4", "_3", "render_memory_block#26", "a46b0d052dad83a4"),
    ("memory.guide_e5", "_3", "render_memory_block#27", "cef97da98558e518"),
    ("memory.guide_e6", "_3", "render_memory_block#28", "bbb579c49d777329"),
    ("memory.entry_open", "_3", "render_memory_block#41", "2e691c487cecf1f7"),
    ("memory.question", "_3", "render_memory_block#46", "cbc252be3af85e29"),
    ("memory.answer", "_3", "render_memory_block#47", "2dd92e44d2314674"),
    ("memory.experience_open", "_3", "render_memory_block#48", "4d5916050a12f4d2"),
    ("memory.findings_open", "_3", "render_memory_block#53", "c037e86cc763d6ec"),
    ("memory.finding", "_3", "render_memory_block#54", "a7e6d57b3cc6f1c1"),
    ("memory.findings_close", "_3", "render_memory_block#55", "a2f277520918629f"),
    ("memory.cautions_open", "_3", "render_memory_block#56", "ce31169d573b7b86"),
    ("memory.caution", "_3", "render_memory_block#57", "49d58fdfb0aa48d7"),
    ("memory.cautions_close", "_3", "render_memory_block#58", "5d8e23a763d8aff2"),
    ("memory.experience_text", "_3", "render_memory_block#59", "9950e673bb51767a"),
    ("memory.experience_close", "_3", "render_memory_block#60", "6d0b5db36c1c8cf4"),
    ("memory.annotation", "_3", "render_memory_block#63", "96e4c1049950cbf5"),
    ("memory.image_sep", "_3", "render_memory_block#64", "05d450fceb2e5481"),
    ("memory.images", "_3", "render_memory_block#65", "a22398baadf2585d"),
    ("memory.entry_close", "_3", "render_memory_block#66", "cf703b0302dac01c"),
    ("memory.opt_out", "_3", "render_memory_block#67", "22bf7e9f917af7f7"),
    ("memory.close", "_3", "render_memory_block#68", "fd4385a9ee2b24d5"),
    ("memory.join", "_3", "inject_memory_into_message#2", "d7a5e915306d21dc"),
    ("entry.context", "_0", "collect#22", "74fd8d2a47de02b2"),
    ("entry.chart", "_0", "collect#24", "064ef8b5d94b4ff8"),
    ("grading.prompt", "_1", "SCORE_PATHS_PROMPT", "99b221c414860111"),
    ("summary.prompt", "_1", "WRITE_EXPERIENCE_PROMPT", "10774e36afc651c6"),
    ("grading.context", "_1", "_build_problem_text#6", "becbf20c9dfb3c29"),
    ("grading.options", "_1", "_build_problem_text#7", "06d5872552b2364d"),
    ("grading.question", "_1", "_build_problem_text#8", "1dbb23e12c96b8f6"),
    ("attempt.correct", "_1", "_format_attempts#3", "4c218f58c60828ed"),
    ("attempt.scored", "_1", "_format_attempts#4", "3f07696e58eba71e"),
    ("attempt.plain", "_1", "_format_attempts#5", "e4ff5ead8ff6fd96"),
    ("attempt.body", "_1", "_format_attempts#6", "b161ba52f466cc17"),
    ("trajectory.reasoning", "_1", "_build_trajectory_text#6", "96e009c88de2a7a5"),
    ("trajectory.assistant", "_1", "_build_trajectory_text#7", "ca93d35f2edf90cd"),
    ("trajectory.call", "_1", "_build_trajectory_text#14", "5018ed00fcdfad66"),
    ("trajectory.output_named", "_1", "_build_trajectory_text#21", "27eb7e8f6a9b6e8b"),
    ("trajectory.output", "_1", "_build_trajectory_text#22", "17fa0787e565707e"),
    ("trajectory.labelled", "_1", "_build_trajectory_text#23", "5ccef8c3ca0f379d"),
    ("summary.give_up", "_14", "ANTI_GIVE_UP_PATTERNS", "0cddf0801bba88b9"),
    ("summary.protective", "_14", "PROTECTIVE_PATTERNS", "a145af94fecc705e"),
    ("judge.prompt", "_6", "_JUDGE_PROMPT", "897906e4c9709ca1"),
)

#: every pinned text, in the order above
PINS: tuple[Pin, ...] = tuple(Pin(n, _F[f], loc, sha) for n, f, loc, sha in _ROWS)
#: the files read, in path order
AUTHORS_FILES: tuple[str, ...] = tuple(sorted(_F.values()))
_BY_NAME = {p.name: p for p in PINS}


def pin(name: str) -> Pin:
    """The pin of ``name`` (KeyError naming the known names for a name that is none)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no authors' text named {name!r}; known: {', '.join(_BY_NAME)}") from None
