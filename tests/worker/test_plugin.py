"""The Temporal plugin: a team's own worker and client, built the SDK's way, run the agents end to end."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any, cast

import pytest
from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer, UnsandboxedWorkflowRunner, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from activities.tools.tool_registry import ToolRegistry
from clients.runs import Runs
from clients.sessions import Sessions
from contracts.activities import ACTIVITIES, ActivityOverride
from conversation import MessageEntry
from hosting.plugin import DurableReactPlugin, PluginConflictError
from payloads.blob_store import BlobStore
from settings.deployment import load_settings
from settings.env_values import SettingsError
from testing import answer, call_tools, script_overrides, scripted_agent, tool_call
from workflows.background.agent_check import AgentConfigCheck
from workflows.background.deliver_webhook import DeliverWebhook
from workflows.background.retention_sweep import RetentionSweep
from workflows.background.run_admission import RunAdmission
from workflows.background.scheduled_ask import ScheduledAsk
from workflows.eval.eval_run import EvalRun
from workflows.run.react_run import ReActRun
from workflows.session.agent_session import AgentSession

ROOT = Path(__file__).resolve().parents[2]

PRODUCT_WORKFLOWS = [
    ReActRun,
    AgentSession,
    ScheduledAsk,
    DeliverWebhook,
    RunAdmission,
    RetentionSweep,
    AgentConfigCheck,
    EvalRun,
]
"""The workflows the plugin registers, in its order."""


def order_status(order_id: str) -> dict[str, str]:
    """Look up an order (a team's own tool).

    Args:
        order_id: the order number.
    """
    return {"order_id": order_id, "status": "shipped"}


@activity.defn
async def team_greeting(name: str) -> str:
    """The team's own activity, next to the agents' on one worker."""
    return f"hello {name}"


@workflow.defn(sandboxed=False)
class TeamWorkflow:
    """The team's own workflow, next to `ReActRun` and `AgentSession` on one worker."""

    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            team_greeting, name, start_to_close_timeout=timedelta(seconds=10)
        )


def team_tools() -> ToolRegistry:
    registry = ToolRegistry()
    registry.register(order_status)
    return registry


def active_config(worker: Worker) -> dict[str, Any]:
    """The configuration the worker runs with, after its plugins."""
    return cast(dict[str, Any], worker.config(active_config=True))


def address_of(client: Client) -> str:
    return client.service_client.config.target_host


def queue() -> str:
    return f"plugin-{uuid.uuid4().hex[:8]}"


async def test_a_team_worker_with_the_plugin_runs_a_session_end_to_end(
    client: Client, store: BlobStore
) -> None:
    plugin = DurableReactPlugin(registry=team_tools(), store=store)
    team_client = await Client.connect(address_of(client), namespace=client.namespace, plugins=[plugin])
    task_queue = queue()
    # The SDK applies a client's plugins to its workers too and warns when the worker names the
    # same type again: the plugin registers the agents once all the same.
    with pytest.warns(UserWarning, match="same plugin type"):
        worker = Worker(
            team_client,
            task_queue=task_queue,
            workflows=[TeamWorkflow],
            activities=[team_greeting],
            plugins=[plugin],
            max_cached_workflows=0,
        )
    active = active_config(worker)
    assert list(active["workflows"]) == [TeamWorkflow, *PRODUCT_WORKFLOWS]
    assert len(list(active["activities"])) == len(ACTIVITIES) + 1
    agent = scripted_agent(tools=["order_status"])
    async with worker:
        session = Sessions(team_client, task_queue=task_queue, store=plugin.blob_store).get(
            f"agent-{queue()}"
        )
        first = await session.ask_sync(
            "Where is A-1001?",
            config=agent,
            overrides=script_overrides(
                call_tools(tool_call("order_status", {"order_id": "A-1001"})), answer("It has shipped.")
            ),
        )
        second = await session.ask_sync("Thanks!", overrides=script_overrides(answer("You are welcome.")))
        greeting = await team_client.execute_workflow(
            TeamWorkflow.run, "team", id=f"team-{queue()}", task_queue=task_queue
        )
        entries = [entry async for entry in session.thread()]
        history = await team_client.get_workflow_handle(first.run_workflow_id).fetch_history()
    assert (first.status, first.result, second.result) == ("completed", "It has shipped.", "You are welcome.")
    assert greeting == "hello team"
    assert [(e.payload.role, e.payload.content) for e in entries if isinstance(e, MessageEntry)] == [
        ("user", "Where is A-1001?"),
        ("assistant", ""),
        ("tool", '{"ok": true, "result": {"order_id": "A-1001", "status": "shipped"}}'),
        ("assistant", "It has shipped."),
        ("user", "Thanks!"),
        ("assistant", "You are welcome."),
    ]
    # The plugin configures a Replayer too: the run's history replays with the product's workflows.
    replayed = await Replayer(workflows=[], plugins=[plugin]).replay_workflow(history)
    assert replayed.replay_failure is None


async def test_a_plugin_on_the_client_gives_every_worker_built_from_it_the_agents(
    client: Client, store: BlobStore
) -> None:
    team_client = await Client.connect(
        address_of(client),
        namespace=client.namespace,
        plugins=[DurableReactPlugin(registry=team_tools(), store=store)],
    )
    task_queue = queue()
    async with Worker(team_client, task_queue=task_queue, max_cached_workflows=0):
        result = await Runs(team_client, task_queue=task_queue, store=store).run(
            "Where is A-2?",
            scripted_agent(call_tools(tool_call("order_status", {"order_id": "A-2"})), answer("Shipped."),
                           tools=["order_status"]),
        )  # fmt: skip
    assert (result.status, result.result) == ("completed", "Shipped.")


async def test_the_worker_s_own_plugin_wins_over_the_client_s(client: Client, store: BlobStore) -> None:
    team_client = await Client.connect(
        address_of(client), namespace=client.namespace, plugins=[DurableReactPlugin(store=store)]
    )  # the client's plugin offers only the built-in tools
    task_queue = queue()
    own = DurableReactPlugin(registry=team_tools(), store=store, sandboxed=True)
    with pytest.warns(UserWarning, match="same plugin type"):
        worker = Worker(team_client, task_queue=task_queue, plugins=[own], max_cached_workflows=0)
    active = active_config(worker)
    assert list(active["workflows"]) == PRODUCT_WORKFLOWS
    assert isinstance(active.get("workflow_runner"), SandboxedWorkflowRunner)
    async with worker:
        result = await Runs(team_client, task_queue=task_queue, store=store).run(
            "Where is A-3?",
            scripted_agent(call_tools(tool_call("order_status", {"order_id": "A-3"})), answer("Shipped."),
                           tools=["order_status"]),
        )  # fmt: skip
    assert (result.status, result.result) == ("completed", "Shipped.")


async def test_what_the_plugin_cannot_configure_is_refused_by_name(client: Client, store: BlobStore) -> None:
    plain = Client(client.service_client, namespace=client.namespace)  # Temporal's default converter
    with pytest.raises(PluginConflictError, match="does not use the product's data converter"):
        Worker(plain, task_queue=queue(), plugins=[DurableReactPlugin(store=store)])
    with pytest.raises(PluginConflictError, match="one DurableReactPlugin"):
        Worker(
            client,
            task_queue=queue(),
            plugins=[DurableReactPlugin(store=store), DurableReactPlugin(store=store)],
        )
    with pytest.raises(PluginConflictError, match="registered already"):
        Worker(client, task_queue=queue(), workflows=[ReActRun], plugins=[DurableReactPlugin(store=store)])
    with pytest.raises(PluginConflictError, match="without a data_converter"):
        Client(
            client.service_client,
            namespace=client.namespace,
            data_converter=pydantic_data_converter,
            plugins=[DurableReactPlugin(store=store)],
        )
    worker = Worker(client, task_queue=queue(), plugins=[DurableReactPlugin(store=store)])
    active = active_config(worker)
    assert isinstance(active.get("workflow_runner"), UnsandboxedWorkflowRunner)
    assert active.get("max_heartbeat_throttle_interval") == timedelta(seconds=2)
    assert active.get("default_heartbeat_throttle_interval") == timedelta(seconds=2)


async def test_deployment_activity_options_reach_the_scheduled_activities(
    client: Client, store: BlobStore
) -> None:
    # From the environment (REACT_ACTIVITY_OPTIONS) and from the plugin's argument, which wins for the
    # activities it names.
    settings = load_settings(
        {"REACT_ACTIVITY_OPTIONS": '{"run_tool": {"start_to_close_timeout_s": 40}, '
                                   '"llm_call": {"heartbeat_timeout_s": 7, "maximum_attempts": 2}}'}
    )  # fmt: skip
    plugin = DurableReactPlugin(
        settings=settings,
        store=store,
        registry=team_tools(),
        activity_options={"run_tool": ActivityOverride(start_to_close_timeout_s=33)},
    )
    assert plugin.activity_overrides == {
        "run_tool": {"start_to_close_timeout_s": 33},
        "llm_call": {"heartbeat_timeout_s": 7, "maximum_attempts": 2},
    }
    task_queue = queue()
    async with Worker(client, task_queue=task_queue, plugins=[plugin], max_cached_workflows=0):
        run = await Runs(client, task_queue=task_queue, store=store).start(
            "Where is A-4?",
            scripted_agent(call_tools(tool_call("order_status", {"order_id": "A-4"})), answer("Shipped."),
                           tools=["order_status"]),
        )  # fmt: skip
        result = await run.result()
        history = await client.get_workflow_handle(run.workflow_id).fetch_history()
    assert result.status == "completed"
    scheduled = {
        (attributes := event.activity_task_scheduled_event_attributes).activity_type.name: attributes
        for event in history.events
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    }
    assert scheduled["run_tool"].start_to_close_timeout.ToTimedelta() == timedelta(seconds=33)
    assert scheduled["llm_call"].heartbeat_timeout.ToTimedelta() == timedelta(seconds=7)
    assert scheduled["llm_call"].retry_policy.maximum_attempts == 2


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("{llm_call", "is not JSON"),
        ('["llm_call"]', "expected a JSON object of activity name -> options"),
        ('{"llm_calls": {}}', "unknown activity llm_calls; activities: llm_call, run_tool"),
        (
            '{"llm_call": {"start_to_close_timeout_s": 0}}',
            "llm_call: start_to_close_timeout_s: Input should be greater",
        ),
        ('{"run_tool": {"timeout": 3}}', "run_tool: timeout: Extra inputs are not permitted"),
    ],
)
def test_bad_activity_options_in_the_environment_are_named(value: str, problem: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"REACT_ACTIVITY_OPTIONS": value})
    assert caught.value.variable == "REACT_ACTIVITY_OPTIONS" and problem in str(caught.value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("openai/llava", "expected model=kinds, got 'openai/llava'"),
        ("=images", "expected model=kinds"),
        ("openai/llava=png", "openai/llava: kinds are images, pdfs (joined by +) or none"),
        ("a=images+none", "a: kinds are images, pdfs"),
        ("a=images,a=none", "a is named twice"),
    ],
)
def test_bad_model_media_in_the_environment_is_named(value: str, problem: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"REACT_MODEL_MEDIA": value})
    assert caught.value.variable == "REACT_MODEL_MEDIA" and problem in str(caught.value)


def test_model_media_names_what_each_model_takes() -> None:
    media = load_settings({"REACT_MODEL_MEDIA": " openai/llava=images, ollama/x:7b=images+pdfs,gpt-4o=none "})
    assert {model: (m.images, m.pdfs) for model, m in media.model_media.items()} == {
        "openai/llava": (True, False),
        "ollama/x:7b": (True, True),
        "gpt-4o": (False, False),
    }
    assert load_settings({}).model_media == {}


def test_the_worker_process_refuses_bad_activity_options_in_one_line() -> None:
    env = {**os.environ, "REACT_ACTIVITY_OPTIONS": '{"llm_call": {"maximum_attempts": -1}}'}
    done = subprocess.run(
        [sys.executable, "worker.py", "--address", "127.0.0.1:1"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    last_line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1
    assert last_line.startswith("worker: REACT_ACTIVITY_OPTIONS: llm_call: maximum_attempts: Input should be")


def test_the_plugin_is_named_after_the_product_not_a_package(store: BlobStore) -> None:
    # The SDK reports this name with a worker's plugins; no `durable_react` package exists to qualify it.
    name = DurableReactPlugin(store=store).name()
    assert name == "DurableReactPlugin"
    assert "." not in name
