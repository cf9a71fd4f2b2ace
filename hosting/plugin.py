"""The Temporal plugin: the product's data converter on a client, its workflows and activities on a worker.

    client = await Client.connect("localhost:7233", plugins=[DurableReactPlugin(registry=my_tools)])
    worker = Worker(client, task_queue="react-agent", workflows=[MyWorkflow])  # and the agents

    # or on the worker, over a client with the product's converter (`hosting.connection.connect`)
    worker = Worker(client, task_queue="react-agent", plugins=[DurableReactPlugin(registry=my_tools)])

On a client it sets the data converter (pydantic JSON, optional encryption, claim check
into the payload store; `build_data_converter`). On a worker it registers `ReActRun`,
`AgentSession` and every activity of `contracts.activities.ACTIVITIES` with the tool
registry, sets the workflow runner (`hosting.sandbox.workflow_runner`), an activity
executor when the worker has none, heartbeats throttled to at most 2 s, and the
deployment's activity option overrides (`ActivityOptionsInterceptor`), and the activity metrics
(`ActivityMetricsInterceptor`, docs/metrics.md). When tracing is on
(a `tracer_provider`, or the `OTEL_*` variables: `hosting.tracing`), it installs Temporal's
`TracingInterceptor` on the client and its workers and the GenAI spans on the workers.

Temporal applies a client's plugins to every worker built from that client, before the
worker's own. So the agents are registered once per worker: a `DurableReactPlugin` given
to the worker wins over the client's (which then only sets the converter), the same
plugin given to both registers once, and two different ones on one worker are refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from temporalio.client import Client
from temporalio.converter import DataConverter, DefaultPayloadConverter
from temporalio.plugin import SimplePlugin
from temporalio.worker import ReplayerConfig, WorkerConfig

from contracts.activities import ActivityOverride
from hosting.data_converter import build_data_converter
from hosting.sandbox import workflow_runner
from hosting.tracing import Tracing
from live.channel import LIVE_URL_ENV, LiveChannel, live_url, open_channel
from live.dev_channel import recorded_url
from payloads.blob_store import BlobStore, shared_blob_store
from payloads.codec import SealedBlobStore
from payloads.converter import ProductPayloadConverter
from settings.deployment import Settings, load_settings

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from activities.llm.request_transformers import RequestTransformers
    from activities.tools.agent_profiles import AgentProfiles
    from activities.tools.tool_registry import ToolRegistry
    from workflows.activity_options import ActivityOptionsInterceptor

__all__ = ["DurableReactPlugin", "PluginConflictError", "build_data_converter"]

PLUGIN_NAME = "DurableReactPlugin"
"""The name the SDK reports the plugin by: the product's (no `durable_react` package exists)."""
ACTIVITY_THREADS = 16
"""Threads of the activity executor the plugin gives a worker that has none (for synchronous activities)."""
HEARTBEAT_THROTTLE = timedelta(seconds=2)
"""Heartbeats reach the server at least this often, so a cancel reaches an in-flight LLM or
tool call quickly and the 10 s heartbeat timeouts have ample slack."""


class PluginConflictError(ValueError):
    """The plugin cannot configure this client or worker as asked (the message says why and what to do)."""


class DurableReactPlugin(SimplePlugin):
    """Durable ReAct on a Temporal client and its workers (see the module's docstring)."""

    def __init__(
        self,
        *,
        settings: Settings | None = None,
        store: BlobStore | None = None,
        registry: ToolRegistry | None = None,
        agents: AgentProfiles | None = None,
        transformers: RequestTransformers | None = None,
        sandboxed: bool | None = None,
        activity_options: Mapping[str, ActivityOverride] | None = None,
        tracer_provider: TracerProvider | None = None,
        capture_content: bool | None = None,
        live_channel: LiveChannel | None = None,
        memory_store_url: str | None = None,
    ) -> None:
        """Configure the plugin; nothing connects and no activity is built until a worker needs it.

        Args:
            settings: the deployment settings (default: `load_settings()`, from the environment).
            store: the payload store (default: the one `settings.payload_store` names). The claim
                check writes the (already encrypted) payloads to it; the message cache and the
                thread archive write through it, sealed when encryption is on.
            registry: the tools the worker offers (default: the built-in ones, e.g. `calculator`).
            agents: the agent profiles runs may offer as tools, by name (default: none;
                see `activities.tools.agent_profiles`).
            transformers: the request transformers configs may name (default: none;
                see `activities.llm.request_transformers`).
            sandboxed: run the workflows in Temporal's sandbox (default `settings.workflow_sandbox`,
                `REACT_WORKFLOW_SANDBOX`; see `hosting.sandbox.workflow_runner`).
            activity_options: deployment overrides of activity options by activity name; they
                win over `REACT_ACTIVITY_OPTIONS` for the activities they name.
            tracer_provider: trace to this OpenTelemetry provider (default: the one the `OTEL_*`
                variables configure, else no tracing; see `hosting.tracing`).
            capture_content: add (redacted) message contents, tool arguments and results to the
                GenAI spans (default `REACT_OTEL_CAPTURE_CONTENT`).
            live_channel: where workers write their runs' live items (default: the one
                `REACT_LIVE_URL` names, `off` for none; unset: the one recorded beside the dev
                server the worker's client talks to, found when the worker is built, else none:
                `live.dev_channel`, `hosting.live_sink`).
            memory_store_url: the long-term store of the memory activities (default `REACT_STORE_URL`,
                else `.temporal/store.db`: `store.settings`); opened when a run first uses memory.

        Raises:
            SettingsError: (with the default settings) a variable has a value that cannot be used;
                or a tracing variable (`OTEL_*`, `REACT_OTEL_CAPTURE_CONTENT`: `hosting.tracing`).
            UnknownActivityError: `activity_options` names an activity the product does not have.
        """
        self.settings = settings or load_settings()
        self._store = store
        self._registry = registry
        self._agents = agents
        self._transformers = transformers
        self._sandboxed = self.settings.workflow_sandbox if sandboxed is None else sandboxed
        self._options = _options_interceptor({**self.settings.activity_options, **(activity_options or {})})
        self._blob_store: BlobStore | None = None
        self._activities: list[Callable[..., Any]] | None = None
        self._executor: Executor | None = None
        self._memory_store_url = memory_store_url
        self.tracing = Tracing.resolve(tracer_provider, capture_content)
        url = live_url() if live_channel is None else None
        self.live_channel = live_channel or (open_channel(url) if url else None)
        self._live_found = live_channel is not None or bool((os.environ.get(LIVE_URL_ENV) or "").strip())
        super().__init__(  # pyright: ignore[reportUnknownMemberType]
            PLUGIN_NAME,
            data_converter=self._converter_for_client,
            interceptors=[self.tracing.temporal] if self.tracing else None,  # the client's (and its workers')
        )

    @property
    def payload_store(self) -> BlobStore:
        """The payload store of the claim check: the one given, else the one the settings name."""
        return self._store or shared_blob_store(self.settings.payload_store)

    @property
    def blob_store(self) -> BlobStore:
        """The store the message cache and the thread archive write through (sealed when encryption is on)."""
        if self._blob_store is None:
            store = self.payload_store
            if self.settings.encryption_on and not isinstance(store, SealedBlobStore):
                store = SealedBlobStore(store, self.settings.encryption_keys)
            self._blob_store = store
        return self._blob_store

    @property
    def registry(self) -> ToolRegistry:
        """The tools the plugin's workers offer."""
        if self._registry is None:
            from activities.tools.tool_registry import default_registry

            self._registry = default_registry()
        return self._registry

    @property
    def agents(self) -> AgentProfiles:
        """The agent profiles the plugin's workers offer (`resolve_agents`); empty unless given."""
        if self._agents is None:
            from activities.tools.agent_profiles import AgentProfiles

            self._agents = AgentProfiles()
        return self._agents

    @property
    def activity_overrides(self) -> Mapping[str, Mapping[str, Any]]:
        """The deployment's activity option overrides: activity name -> the option fields it sets."""
        return self._options.overrides if self._options else {}

    def build_data_converter(self) -> DataConverter:
        """The product's data converter with this plugin's settings and payload store."""
        return build_data_converter(self.settings, store=self.payload_store)

    def _converter_for_client(self, existing: DataConverter | None) -> DataConverter:
        if existing is None or existing.payload_converter_class is DefaultPayloadConverter:
            return self.build_data_converter()
        if issubclass(existing.payload_converter_class, ProductPayloadConverter):
            return existing  # already the product's (e.g. with a store of its own)
        raise PluginConflictError(
            "DurableReactPlugin sets the client's data converter (pydantic JSON, claim check, codec from "
            "the REACT_* settings): connect without a data_converter of your own"
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """Register the agents on the worker, unless another plugin on it does (see the module's docstring).

        Raises:
            PluginConflictError: the worker's client does not use the product's data converter, the
                worker has two different `DurableReactPlugin`s, or its workflows are registered already.
        """
        values = cast(dict[str, Any], config)  # WorkerConfig.get's overloads are partly untyped
        own = [p for p in values.get("plugins") or () if isinstance(p, DurableReactPlugin)]
        if own and self not in own:
            return config  # the client's plugin: the worker brought its own, which wins
        if len({id(p) for p in own}) > 1:
            raise PluginConflictError("a worker takes one DurableReactPlugin; give the worker only one")
        if self._registered_on(values.get("activities") or ()):
            return config  # the same plugin, given to the client and to the worker: registered once
        client: Client | None = values.get("client")
        if client is None or client.data_converter.payload_converter_class is DefaultPayloadConverter:
            raise PluginConflictError(
                "the worker's client does not use the product's data converter: connect with "
                "Client.connect(..., plugins=[DurableReactPlugin()]) or hosting.connection.connect()"
            )
        self._find_dev_channel(client)
        values["workflows"] = self._with_agent_workflows(values.get("workflows") or ())
        values["activities"] = [*(values.get("activities") or ()), *self._agent_activities()]
        values["workflow_runner"] = workflow_runner(sandboxed=self._sandboxed)
        if values.get("activity_executor") is None:
            self._executor = self._executor or ThreadPoolExecutor(max_workers=ACTIVITY_THREADS)
            values["activity_executor"] = self._executor
        for throttle in ("max_heartbeat_throttle_interval", "default_heartbeat_throttle_interval"):
            values[throttle] = min(values.get(throttle) or HEARTBEAT_THROTTLE, HEARTBEAT_THROTTLE)
        from hosting.activity_metrics import ActivityMetricsInterceptor  # loads activity code: workers only

        values["interceptors"] = [*(values.get("interceptors") or ()), ActivityMetricsInterceptor()]
        if self._options is not None:
            values["interceptors"] = [*(values.get("interceptors") or ()), self._options]
        if self.live_channel is not None:
            from hosting.live_sink import LiveSinkInterceptor  # loads workflow code: workers only

            values["interceptors"] = [
                *(values.get("interceptors") or ()),
                LiveSinkInterceptor(self.live_channel),
            ]
        if self.tracing is not None:
            interceptors = values.get("interceptors") or ()
            values["interceptors"] = self.tracing.worker_interceptors(client, interceptors)
        return config

    def _find_dev_channel(self, client: Client) -> None:
        """With no channel given or named, the one recorded beside the dev server (`live.dev_channel`)."""
        if self._live_found or self._activities is not None:
            return
        self._live_found = True
        url = recorded_url(client.service_client.config.target_host)
        if url is not None:
            self.live_channel = open_channel(url)

    def configure_replayer(self, config: ReplayerConfig) -> ReplayerConfig:
        """The product's data converter, workflows and workflow runner on a `Replayer`."""
        config = super().configure_replayer(config)
        values = cast(dict[str, Any], config)
        values["workflows"] = self._with_agent_workflows(values.get("workflows") or ())
        values["workflow_runner"] = workflow_runner(sandboxed=self._sandboxed)
        return config

    @staticmethod
    def _with_agent_workflows(workflows: Sequence[type]) -> list[type]:
        from workflows.background.agent_check import AgentConfigCheck
        from workflows.background.deliver_webhook import DeliverWebhook
        from workflows.background.retention_sweep import RetentionSweep
        from workflows.background.run_admission import RunAdmission
        from workflows.background.scheduled_ask import ScheduledAsk
        from workflows.eval.eval_run import EvalRun
        from workflows.run.react_run import ReActRun
        from workflows.session.agent_session import AgentSession  # imported here: clients never need them

        product = (
            ReActRun,
            AgentSession,
            ScheduledAsk,
            DeliverWebhook,
            RunAdmission,
            RetentionSweep,
            AgentConfigCheck,
            EvalRun,
        )
        if any(w in workflows for w in product):
            raise PluginConflictError(
                f"{'/'.join(w.__name__ for w in product)} are registered already; "
                "let DurableReactPlugin register them (and every activity) instead"
            )
        return [*workflows, *product]

    def _registered_on(self, activities: Sequence[object]) -> bool:
        return self._activities is not None and any(a in activities for a in self._activities)

    def _agent_activities(self) -> list[Callable[..., Any]]:
        """Every activity of the product, bound to this plugin's registry and store (built once)."""
        if self._activities is None:
            # Imported here: a client-only process (the CLI, a service) never loads the activities.
            from activities.background.ask_for_schedule import ask_for_schedule
            from activities.background.run_admission import check_admission_slots
            from activities.background.webhook_post import deliver_webhook
            from activities.evals.scoring import EvalActivities
            from activities.llm.attachment_parts import ModelMediaActivity
            from activities.llm.live_partial import LivePartialActivity
            from activities.llm.llm_call import LLMActivities
            from activities.llm.message_cache import MessageCache
            from activities.llm.request_transformers import RequestTransformers, TransformRequestActivity
            from activities.llm.summarize import summarize
            from activities.llm.token_count import count_tokens
            from activities.memory.memory_activities import MemoryActivities
            from activities.memory.usage_activities import UsageActivities
            from activities.output.output_parsing import check_output_schema
            from activities.snapshots.archive import ArchiveActivities
            from activities.snapshots.snapshot import export_snapshot, restore_snapshot
            from activities.tools.agent_profiles import ResolveAgentsActivity
            from activities.tools.tool_calls import ToolActivities
            from hosting.retention import sweep_idle_threads

            tools = ToolActivities(self.registry)
            media = self.settings.model_media
            llm = LLMActivities(self.registry, MessageCache(self.blob_store), self.live_channel, media)
            archive = ArchiveActivities(self.blob_store)
            agents = ResolveAgentsActivity(self.agents)
            transform = TransformRequestActivity(self._transformers or RequestTransformers())
            memory = MemoryActivities(self._memory_store_url)
            evals = EvalActivities(self._memory_store_url)
            self._activities = [
                llm.llm_call,
                tools.run_tool,
                tools.resolve_tools,
                export_snapshot,
                restore_snapshot,
                summarize,
                count_tokens,
                archive.archive_segment,
                archive.read_segment,
                tools.check_tool_arguments,
                agents.resolve_agents,
                check_output_schema,
                transform.transform_request,
                ask_for_schedule,
                deliver_webhook,
                check_admission_slots,
                LivePartialActivity(self.live_channel).cut_streamed_call,
                memory.memory_save,
                memory.memory_search,
                memory.memory_delete,
                memory.memory_recall,
                sweep_idle_threads,
                UsageActivities(memory).record_usage,
                ModelMediaActivity(media).model_media,
                evals.score_eval_case,
                evals.finish_eval,
            ]
        return self._activities


def _options_interceptor(overrides: Mapping[str, ActivityOverride]) -> ActivityOptionsInterceptor | None:
    """The interceptor installing `overrides` on a worker; None when there are none (nothing to install)."""
    if not overrides:
        return None
    from workflows.activity_options import ActivityOptionsInterceptor  # not loaded by client-only processes

    return ActivityOptionsInterceptor(overrides)
