// The chat page: sessions, a live AG-UI run, approvals, steering, files, branches, fork and reset.
// The thread id is kept in the URL and localStorage, the last event id in localStorage: a
// reload re-attaches to the running request (replayed from its start), a dropped
// connection resumes right after the last event it saw.

import { AgentsPanel, markVersions, parseAgent } from "./agents.js";
import * as api from "./api.js";
import { Approvals } from "./approvals.js";
import { Branches } from "./branches.js";
import { acceptFiles, mediaParts, PendingFiles, savedFiles, sentFiles } from "./files.js";
import { el, LiveView, transcriptItems } from "./render.js";
import { MemoryPanel } from "./memory.js";
import { SchedulesPanel } from "./schedules.js";
import { setUpSignIn, signIn, signOut } from "./signin.js";

const $ = (id) => document.getElementById(id);
const CURRENT_KEY = "react-chat:current";
const live = new LiveView($("live"));
const state = {
  agent: "default",
  threadId: null,
  seen: new Set(), // SSE ids already shown: a steer's stream and a re-attach may repeat events
  streams: new Set(), // open streams: {controller, started, finished}
};

function running() {
  return [...state.streams].some((s) => s.started && !s.finished);
}

function showError(error) {
  $("error").textContent = error instanceof Error ? error.message : String(error);
  $("error").hidden = false;
}

const approvals = new Approvals(live, (resume) => {
  void stream((signal, handler) => api.run(state.agent, runInput([], { resume }), handler, signal));
}, showError);

async function guarded(action) {
  try {
    $("error").hidden = true;
    await action();
  } catch (error) {
    showError(error);
  }
}

function eventKey() {
  return `react-chat:last-event:${state.agent}/${state.threadId}`;
}

function remember() {
  const url = new URL(location.href);
  url.searchParams.set("agent", state.agent);
  url.searchParams.set("thread", state.threadId);
  history.replaceState(null, "", url);
  localStorage.setItem(CURRENT_KEY, JSON.stringify({ agent: state.agent, threadId: state.threadId }));
}

function setRunning() {
  const busy = running();
  $("send").textContent = busy ? "Send while busy" : "Send";
  $("status").textContent = busy ? "working…" : $("status").dataset.idle || "";
  document.body.dataset.running = busy ? "yes" : "no";
}

function formatUsage(usage) {
  if (!usage) return "";
  const cost = usage.cost_usd ? ` · $${Number(usage.cost_usd).toFixed(6)}` : "";
  return `${usage.prompt_tokens ?? 0} in / ${usage.completion_tokens ?? 0} out tokens · ${usage.llm_calls ?? 0} LLM calls${cost}`;
}

// One event of stream `s`. Lifecycle events belong to their stream; the others are shown once.
function onEvent(s, event, id) {
  const key = `${id}|${event.type}|${event.name || ""}`; // events a position renders share its id
  const repeated = Boolean(id) && state.seen.has(key);
  if (id && !repeated) {
    state.seen.add(key);
    localStorage.setItem(eventKey(), id);
  }
  switch (event.type) {
    case "RUN_STARTED":
      s.started = true;
      setRunning();
      break;
    case "RUN_FINISHED":
      s.finished = true;
      setRunning();
      if (event.outcome && event.outcome.type === "interrupt") approvals.ask(event.outcome.interrupts);
      else if (!running()) void guarded(() => loadThread(8));
      break;
    case "RUN_ERROR":
      s.finished = true;
      if (!repeated) live.apply(event);
      setRunning();
      break;
    case "STATE_SNAPSHOT":
      $("status").title = `agent state: ${JSON.stringify(event.snapshot)}`;
      break;
    case "CUSTOM":
      if (!repeated) onCustom(event.name, event.value);
      break;
    default:
      if (!repeated) live.apply(event);
  }
}

// What AG-UI has no name for: the session's answer to an ask, refusals, usage.
function onCustom(name, value) {
  const fields = value && typeof value === "object" ? value : {};
  if (name === "ask") {
    if (fields.disposition !== "started") live.note(`your message was ${fields.disposition}${fields.mode ? ` (${fields.mode})` : ""}`);
  } else if (name === "ask_refused" || name === "approval_refused") {
    live.note(`refused (${fields.reason}): ${fields.message}`, "error");
  } else if (/usage|cost/i.test(name) && value && typeof value === "object") {
    $("usage").textContent = formatUsage(fields.usage || fields);
  } else if (name !== "approvals") {
    live.note(`${name}: ${JSON.stringify(value)}`);
  }
}

function runInput(messages, extra = {}) {
  return { threadId: state.threadId, runId: api.randomId("run-"), state: {}, messages, tools: [], context: [], forwardedProps: {}, ...extra };
}

// Run one stream (`open(signal, handler)`); one that breaks before its run ends is re-attached
// right after the last event shown, unless another stream still follows the run.
async function stream(open, attempt = 0, started = false) {
  const s = { controller: new AbortController(), started, finished: false };
  state.streams.add(s);
  let failed = false;
  try {
    await open(s.controller.signal, (event, id) => onEvent(s, event, id));
  } catch (error) {
    if (s.controller.signal.aborted) return;
    failed = true;
    if (!(error instanceof TypeError)) showError(error); // a TypeError is a dropped connection: retried below
  } finally {
    state.streams.delete(s);
    setRunning();
  }
  if (s.controller.signal.aborted || s.finished || !s.started || running() || attempt >= 5) return;
  if (failed) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
  const after = localStorage.getItem(eventKey());
  void stream((signal, handler) => api.attach(state.agent, state.threadId, after, handler, signal), attempt + 1, true);
}

function closeStreams() {
  for (const s of state.streams) s.controller.abort();
  state.streams.clear();
  state.seen.clear();
  approvals.clear();
  setRunning();
}

// Ask `text` with `files` ({attachment, preview}) in the open thread (`runId`: a branch's first ask
// has its request id). A message with files cannot steer: it is queued after the answer instead.
async function ask(text, files, runId = api.randomId("run-")) {
  const chosen = $("on-busy").value;
  const onBusy = chosen === "steer" && files.length ? "enqueue" : chosen;
  const forwardedProps = { on_busy: onBusy, ...(onBusy === "steer" ? { mode: $("steer-mode").value } : {}) };
  live.user(text, sentFiles(files, showError));
  const content = files.length ? [{ type: "text", text }, ...mediaParts(files.map((f) => f.attachment))] : text;
  const message = { id: api.randomId("msg-"), role: "user", content };
  await stream((signal, handler) => api.run(state.agent, runInput([message], { forwardedProps, runId }), handler, signal));
  void loadSessions();
  void guarded(() => memory.load()); // the agent may have saved (or forgotten) something
}

// The thread's saved entries, status and usage. After a run (`retries` > 0) the live view gives
// way to the transcript once the session is idle (it records the run's entries as it ends).
// A read that comes back after another conversation was opened (New chat, a click in the list)
// shows nothing: it would put the old conversation's messages under the new one's.
async function loadThread(retries = 0) {
  const { agent, threadId } = state;
  const url = `/api/threads/${encodeURIComponent(agent)}/${encodeURIComponent(threadId)}`;
  const stale = () => state.agent !== agent || state.threadId !== threadId;
  let thread;
  try {
    thread = await api.getJson(url);
  } catch (error) {
    if (stale()) return null;
    if (error.status !== 404) throw error;
    $("transcript").replaceChildren(); // not asked yet: a new chat
    branches.family = null;
    return null;
  }
  if (stale()) return null;
  $("thread-title").textContent = thread.thread_id;
  $("status").dataset.idle = thread.status;
  if (!running()) $("status").textContent = thread.status;
  $("usage").textContent = formatUsage(thread.usage);
  const link = thread.web_ui && (thread.web_ui.run || thread.web_ui.session);
  $("webui-link").hidden = !link;
  if (link) $("webui-link").href = link;
  $("reset").disabled = false;
  const busy = thread.status === "running";
  if (retries > 0 && busy) {
    if (!running()) setTimeout(() => guarded(() => loadThread(retries - 1)), 500);
    return thread; // the live view stays until the session has recorded the run
  }
  const shown = thread.messages.filter((entry) => !(busy && entry.request_id === thread.active_request_id && entry.role !== "user"));
  const family = await branches.load(agent, threadId);
  if (stale()) return null;
  const items = transcriptItems(shown, (seq) => guarded(() => fork(seq)), (attachments) => savedFiles(attachments, showError));
  branches.decorate(agent, threadId, shown, family, items, busy);
  markVersions(items, shown, thread.request_records || []);
  $("transcript").replaceChildren(...items);
  if (retries > 0) live.clear();
  return thread;
}

async function fork(seq) {
  const path = `/api/threads/${encodeURIComponent(state.agent)}/${encodeURIComponent(state.threadId)}/fork`;
  const forked = await api.postJson(path, { seq });
  await openThread(forked.agent, forked.thread_id);
  void loadSessions();
}

async function reset() {
  const path = `/api/threads/${encodeURIComponent(state.agent)}/${encodeURIComponent(state.threadId)}/reset`;
  const ack = await api.postJson(path, {});
  live.note(`reset: ${ack.status}`);
  await loadThread();
}

async function openThread(agent, threadId) {
  closeStreams();
  live.clear();
  pending.clear();
  if (agent !== state.agent) void guarded(() => memory.reset()); // the panel follows the agent
  state.agent = agent;
  state.threadId = threadId;
  void agents.show(agent).catch(showError);
  remember();
  markCurrent();
  const thread = await loadThread();
  if (thread && thread.status === "running") {
    void stream((signal, handler) => api.attach(agent, threadId, null, handler, signal));
  }
}

function newChat() {
  closeStreams();
  live.clear();
  pending.clear();
  branches.family = null;
  state.threadId = api.randomId("chat-");
  $("transcript").replaceChildren();
  $("thread-title").textContent = "New chat";
  $("status").textContent = $("usage").textContent = "";
  $("status").dataset.idle = "";
  $("webui-link").hidden = true;
  $("reset").disabled = true;
  remember();
  markCurrent();
}

function markCurrent() {
  const { name } = parseAgent(state.agent); // a pinned version is the same conversation
  for (const item of $("sessions").children) {
    item.classList.toggle("current", item.dataset.agent === name && item.dataset.thread === state.threadId);
  }
}

// A session's title when the listing gives one (its first message, or a name), else its thread id.
function sessionName(thread) {
  return thread.title || thread.thread_id;
}

// When it was last used, when the listing says; else when a live session started, or how it ended.
function sessionState(thread) {
  if (thread.last_used_at) return new Date(thread.last_used_at).toLocaleString();
  return thread.status === "running" ? new Date(thread.started_at).toLocaleString() : thread.status;
}

async function loadSessions() {
  const { threads } = await api.getJson("/api/threads");
  $("sessions").dataset.loaded = "yes";
  $("sessions").replaceChildren(
    ...threads.map((thread) =>
      el(
        "li",
        { "data-agent": thread.agent, "data-thread": thread.thread_id, title: thread.session_id, onclick: () => guarded(() => openThread(thread.agent, thread.thread_id)) },
        thread.agent === "default" ? sessionName(thread) : `${thread.agent} / ${sessionName(thread)}`,
        el("span", { class: "state" }, sessionState(thread)),
      ),
    ),
  );
  markCurrent();
}

const pending = new PendingFiles($("attachments"), () => ({ agent: state.agent, threadId: state.threadId }), showError);
const branches = new Branches(
  openThread,
  (text, attachments, runId) => ask(text, attachments.map((attachment) => ({ attachment, preview: null })), runId),
  guarded,
);
const schedules = new SchedulesPanel(() => ({ agent: state.agent, threadId: state.threadId }), guarded);
const memory = new MemoryPanel(() => state.agent, guarded);
// Another agent starts a new chat; another version of the open one asks in the same thread.
const agents = new AgentsPanel(
  () => state.agent,
  (agent, sameThread) => {
    if (sameThread) return void guarded(() => openThread(agent, state.threadId));
    state.agent = agent;
    newChat();
    void agents.show(agent).catch(showError);
    void guarded(() => memory.reset());
  },
  guarded,
);

// The stored token in the token field, unless someone is typing one there: the page's start (after
// the sign-in set-up's fetch) may come while a token is being typed, and must not wipe it.
function showToken() {
  if (document.activeElement !== $("token")) $("token").value = api.token();
}

// Send waits while the page (re)starts: a start opens the saved conversation or a new chat, which
// would drop the stream of a message sent before it got there. Starts can overlap (a token entered
// while the first start still reads): Send waits until the last one is over.
let startsInFlight = 0;
async function start() {
  startsInFlight += 1;
  $("send").disabled = true;
  try {
    showToken();
    const params = new URL(location.href).searchParams;
    const saved = JSON.parse(localStorage.getItem(CURRENT_KEY) || "null");
    const current = params.get("thread") ? { agent: params.get("agent") || "default", threadId: params.get("thread") } : saved;
    await agents.load();
    await loadSessions();
    if (current) await openThread(current.agent, current.threadId);
    else newChat();
  } finally {
    startsInFlight -= 1;
    if (startsInFlight === 0) $("send").disabled = false;
  }
  // Last: the conversation is open before anything else is awaited. Each panel loads even when the
  // other's scope is refused (the memory panel shows its own refusals).
  const panels = [schedules.load(), memory.reset()];
  for (const panel of panels) await panel;
}

// The composer's message and files. It waits for the files still uploading: one refused, nothing is
// sent (the refusal is shown; the text and the other files stay). A message to a family's root goes
// to its newest branch (docs/branches.md): that branch is opened first, so the answer shows.
let composing = false;
async function send(text) {
  let files;
  composing = true;
  try {
    if (!(await pending.settled())) return;
    $("message").value = "";
    files = pending.take();
    const target = branches.reaches(state.threadId);
    if (target !== state.threadId) {
      await openThread(state.agent, target);
      live.note(`this conversation continues on its newest branch, ${target}`);
    }
  } finally {
    composing = false;
  }
  await ask(text, files);
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  const text = $("message").value.trim();
  if (!text || $("send").disabled || composing) return; // starting: the text stays for the next Enter
  void guarded(() => send(text));
});
$("attach").addEventListener("click", () => $("files").click());
$("files").addEventListener("change", () => {
  pending.add([...$("files").files]);
  $("files").value = "";
});
acceptFiles(pending, [$("chat")], $("message"));
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});
$("token").addEventListener("change", () => {
  api.setToken($("token").value.trim());
  void guarded(start);
});
$("new-chat").addEventListener("click", newChat);
$("reset").addEventListener("click", () => guarded(reset));
$("sign-in").addEventListener("click", () => guarded(signIn));
$("sign-out").addEventListener("click", signOut);
void guarded(async () => {
  await setUpSignIn((signedIn) => {
    $("sign-in").hidden = signedIn;
    $("sign-out").hidden = !signedIn;
    showToken();
  });
  await start();
});
