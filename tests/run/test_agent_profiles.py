"""Agent profiles: the registry, the `resolve_agents` activity on a real worker, and `--agents` loading."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from temporalio.client import Client, WorkflowFailureError
from temporalio.exceptions import ActivityError, ApplicationError

from activities.tools.agent_profiles import AgentProfiles
from activities.tools.tool_loading import ToolLoadError, build_agent_profiles, option_values
from contracts.agent import AgentConfig
from contracts.agent_profiles import AgentProfile, ResolveAgentsRequest
from payloads.blob_store import BlobStore
from testing import AgentTestEnvironment, answer, scripted_agent
from tests.activity_probe import ActivityProbe, call_activity
from worker import build_worker

REPO = Path(__file__).resolve().parents[2]
RESEARCHER = scripted_agent(answer("Found it."), system_prompt="You research.")
WRITER = AgentConfig(model="gpt-4o-mini", tools=["calculator"])


def profiles() -> AgentProfiles:
    registered = AgentProfiles()
    registered.register("researcher", RESEARCHER, description="Finds facts")
    registered.register("writer", WRITER)
    return registered


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def queue(client: Client) -> AsyncIterator[str]:
    """A worker with two agent profiles and the probe workflow; its task queue."""
    name = f"agent-profiles-{uuid.uuid4().hex[:8]}"
    worker = build_worker(
        client, task_queue=name, agents=profiles(), workflows=[ActivityProbe], max_cached_workflows=0
    )
    async with worker:
        yield name


async def resolve(client: Client, queue: str, *names: str) -> list[AgentProfile]:
    raw: Any = await call_activity(
        client, queue, "resolve_agents", ResolveAgentsRequest(names=list(names)).model_dump()
    )
    return [AgentProfile.model_validate(item) for item in raw]


async def refusal(client: Client, queue: str, *names: str) -> ApplicationError:
    with pytest.raises(WorkflowFailureError) as caught:
        await resolve(client, queue, *names)
    activity_error = caught.value.cause
    assert isinstance(activity_error, ActivityError)
    assert isinstance(activity_error.cause, ApplicationError)
    return activity_error.cause


# ---- the registry ----------------------------------------------------------------------------


def test_profiles_register_by_tool_name_rules_once_each() -> None:
    registered = profiles()
    assert registered.names() == ["researcher", "writer"]
    assert registered.get("researcher") == AgentProfile(
        name="researcher", description="Finds facts", config=RESEARCHER
    )
    assert registered.get("nobody") is None and "writer" in registered and len(registered) == 2
    with pytest.raises(ValueError, match="agent profile 'writer' is already registered"):
        registered.register("writer", RESEARCHER)
    with pytest.raises(ValueError, match=r"agent profile name 'two words' must match"):
        registered.register("two words", WRITER)
    with pytest.raises(ValueError, match="must match"):
        registered.register("x" * 65, WRITER)
    with pytest.raises(ValueError, match="description is over 4,000 characters"):
        registered.register("verbose", WRITER, description="x" * 4_001)
    with pytest.raises(TypeError, match="config must be an AgentConfig, not dict"):
        registered.register("raw", {"model": "gpt-4o-mini"})  # pyright: ignore[reportArgumentType]
    assert registered.names() == ["researcher", "writer"]  # nothing half registered


def test_include_adds_all_or_nothing() -> None:
    target = AgentProfiles()
    target.register("writer", RESEARCHER)
    with pytest.raises(ValueError, match="agent profiles already registered: 'writer'"):
        target.include(profiles())
    assert target.names() == ["writer"]


def test_the_plugin_and_the_test_environment_take_the_profiles(store: BlobStore) -> None:
    registered = profiles()
    assert AgentTestEnvironment(agents=registered, store=store).plugin.agents is registered
    assert AgentTestEnvironment(store=store).plugin.agents.names() == []


# ---- resolve_agents on a real worker ---------------------------------------------------------


async def test_resolve_agents_answers_the_profiles_in_the_order_asked(client: Client, queue: str) -> None:
    writer, researcher = await resolve(client, queue, "writer", "researcher")
    assert (writer.name, writer.description, writer.config) == ("writer", "", WRITER)
    assert (researcher.description, researcher.config.script) == ("Finds facts", RESEARCHER.script)


async def test_an_unknown_profile_is_a_named_refusal(
    client: Client, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-agent-profile-secret-4f2a9b"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    error = await refusal(client, queue, "researcher", "critic", secret)
    assert (error.type, error.non_retryable) == ("unknown_agent", True)
    assert error.message.startswith("unknown agent profiles: 'critic', '")
    assert error.message.endswith("; available profiles: researcher, writer")
    assert secret not in error.message and secret not in str(error.details)


# ---- --agents --------------------------------------------------------------------------------


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    monkeypatch.syspath_prepend(str(tmp_path))  # pyright: ignore[reportUnknownMemberType]
    prefix = f"a{uuid.uuid4().hex[:8]}"
    yield tmp_path, prefix
    for name in [name for name in sys.modules if name.startswith(prefix)]:
        del sys.modules[name]


PROFILES_MODULE = """
from activities.tools.agent_profiles import AgentProfiles
from contracts.agent import AgentConfig

agents = AgentProfiles()
agents.register("helper", AgentConfig(model="gpt-4o-mini"), description="Helps")
team = AgentProfiles()
team.register("critic", AgentConfig(model="gpt-4o-mini"))
empty = AgentProfiles()
not_profiles = {"helper": 1}
"""


def test_agents_load_from_a_module_or_a_module_attribute(modules: tuple[Path, str]) -> None:
    folder, prefix = modules
    (folder / f"{prefix}_agents.py").write_text(textwrap.dedent(PROFILES_MODULE))
    loaded = build_agent_profiles([f"{prefix}_agents", f"{prefix}_agents:team"])
    assert loaded.names() == ["critic", "helper"]
    assert build_agent_profiles([]).names() == []
    assert option_values(None, "REACT_AGENTS", {"REACT_AGENTS": "a.b, c:d"}) == ["a.b", "c:d"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("{m}_agents:empty", "--agents {m}_agents:empty: 'empty' registers no agent profiles"),
        (
            "{m}_agents:not_profiles",
            "--agents {m}_agents:not_profiles: 'not_profiles' is a dict, not an AgentProfiles",
        ),
        ("{m}_agents:missing", "--agents {m}_agents:missing: the module has no 'missing'; define"),
        ("{m}_agents:9x", "--agents {m}_agents:9x: '9x' is not an attribute name"),
        ("{m}_nothere", "--agents {m}_nothere: no module named '{m}_nothere'"),
        ("{m}_broken", "--agents {m}_broken: importing it failed: ZeroDivisionError: division by zero"),
        ("not a module", "--agents not a module: not a dotted module name"),
    ],
)
def test_an_agents_module_that_cannot_be_used_is_one_clear_line(
    modules: tuple[Path, str], spec: str, message: str
) -> None:
    folder, prefix = modules
    (folder / f"{prefix}_agents.py").write_text(textwrap.dedent(PROFILES_MODULE))
    (folder / f"{prefix}_broken.py").write_text("1 / 0\n")
    with pytest.raises(ToolLoadError) as caught:
        build_agent_profiles([spec.format(m=prefix)])
    assert str(caught.value).startswith(message.format(m=prefix))


def test_the_same_profile_from_two_modules_is_refused(modules: tuple[Path, str]) -> None:
    folder, prefix = modules
    (folder / f"{prefix}_agents.py").write_text(textwrap.dedent(PROFILES_MODULE))
    (folder / f"{prefix}_more.py").write_text(textwrap.dedent(PROFILES_MODULE))
    with pytest.raises(ToolLoadError) as caught:
        build_agent_profiles([f"{prefix}_agents", f"{prefix}_more"])
    assert str(caught.value) == (
        f"--agents {prefix}_more: agent profiles already registered: 'helper' (by an earlier --agents)"
    )


def test_the_worker_process_refuses_bad_agents_with_one_line() -> None:
    env = {
        k: v for k, v in os.environ.items() if k not in ("REACT_TOOLS", "REACT_MCP_CONFIG", "REACT_AGENTS")
    }
    done = subprocess.run(
        [sys.executable, str(REPO / "worker.py"), "--address", "127.0.0.1:1", "--agents", "nope_agents:team"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == "worker: --agents nope_agents:team: no module named 'nope_agents' " + (
        "(install it, or add its folder to PYTHONPATH)"
    ), done.stderr
