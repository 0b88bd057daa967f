"""The suite's own scheduling (tests/conftest.py): which tests use a vLLM engine, so that under
``make test`` they all run on one worker (each engine starts once) and the rest on the other."""

from __future__ import annotations

import pytest


@pytest.fixture()
def c(request: pytest.FixtureRequest):
    """tests/conftest.py as pytest loaded it (its plugin, whatever its module name)."""
    return next(m for m in request.config.pluginmanager.get_plugins() if hasattr(m, "item_uses_engine"))


def _starts_one() -> None:  # never called: its text is what counts
    from serving.engines.vllm_engine import EngineOptions

    EngineOptions(kv_cache_gib=1)


def _asks_the_session_server(request) -> None:  # never called
    request.getfixturevalue("openai_server")


def _helper_chain() -> None:  # never called: reaches _starts_one through a module global
    _starts_one()


def _scripted_only() -> None:
    from serving.chat.scripted import ScriptedBackend

    ScriptedBackend(default="{}")


def test_engine_code_is_found_through_the_functions_a_test_calls(c) -> None:
    assert c._reaches_engine(_starts_one)
    assert c._reaches_engine(_helper_chain)  # one call deep, through the module's globals
    assert c._reaches_engine(lambda: _helper_chain())  # a lambda names it too
    assert c._reaches_engine(_asks_the_session_server)  # a session engine fixture by name
    assert not c._reaches_engine(_scripted_only)
    assert not c._reaches_engine(_helper_chain, depth=0)  # the depth bound holds


def test_this_scripted_test_is_not_an_engine_test(c, request: pytest.FixtureRequest) -> None:
    assert not c.item_uses_engine(request.node)


@pytest.mark.engine
def test_the_engine_mark_makes_an_engine_test(c, request: pytest.FixtureRequest) -> None:
    """Marked only (nothing starts): the scheduler sends it to the engine worker."""
    assert c.item_uses_engine(request.node)


def test_the_conftests_own_gates_do_not_count(c) -> None:
    """The autouse fixtures name the session server in strings; they must not make every test
    an engine test."""
    assert not c._reaches_engine(c._start_children)


def test_engines_under_workers_get_the_last_cores_and_one_process_keeps_auto(c) -> None:
    assert c.engine_cores_for_workers([0, 1], 2) == "1"  # make test on 2 cores: the other worker keeps core 0
    assert c.engine_cores_for_workers([1, 0, 3, 2, 5, 4, 7, 6], 2) == "4,5,6,7"
    assert c.engine_cores_for_workers([0, 1, 2], 4) == "2"  # at least one core
    assert c.engine_cores_for_workers([0, 1], 0) is None  # no xdist: vLLM's auto (every core)
    assert c.engine_cores_for_workers([0, 1], 1) is None
    assert c.engine_cores_for_workers([], 2) is None


def test_this_worker_binds_its_engines_unless_the_user_chose(c) -> None:
    import os

    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 0)
    expected = c.engine_cores_for_workers(c._usable_cores(), workers)
    if expected is None:
        pytest.skip("one process: the engines keep vLLM's auto binding")
    if c._bind_was_the_users:
        pytest.skip("VLLM_CPU_OMP_THREADS_BIND was set before the session; the user's value stands")
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == expected
