// The official AG-UI client (@ag-ui/client) against the gateway; run by tests/agui/test_gateway_agui_js.py.
//   node agui_client.mjs <scenario>   with GATEWAY_URL, GATEWAY_TOKEN, THREAD_ID in the environment
// Prints one JSON object with what the scenario saw; the Python test asserts on it.
import { HttpAgent, runHttpRequest, transformHttpEventStream } from "@ag-ui/client";

const base = process.env.GATEWAY_URL;
const headers = { Authorization: `Bearer ${process.env.GATEWAY_TOKEN}` };
const threadId = process.env.THREAD_ID;

function agentFor(name, fetchImpl) {
  return new HttpAgent({ url: `${base}/agui/${name}`, headers, threadId, fetch: fetchImpl });
}

function recorder() {
  const events = [];
  return { events, subscriber: { onEvent: ({ event }) => { events.push(event); } } };
}

const textOf = (events) =>
  events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");

async function full() {
  const agent = agentFor("default");
  agent.addMessage({ id: "js-u1", role: "user", content: "Hello from JavaScript" });
  const { events, subscriber } = recorder();
  const result = await agent.runAgent({ runId: "js-full-1" }, subscriber);
  return { types: events.map((e) => e.type), text: textOf(events), result: result.result, runId: events[0].runId,
    messages: agent.messages.map((m) => m.role) };
}

async function approval() {
  const agent = agentFor("approver");
  agent.addMessage({ id: "js-u2", role: "user", content: "What is 17 * 23?" });
  const first = recorder();
  await agent.runAgent({ runId: "js-approval-1" }, first.subscriber);
  const finished = first.events.at(-1);
  const interrupts = agent.pendingInterrupts.map((i) => ({ id: i.id, toolCallId: i.toolCallId, metadata: i.metadata }));
  const resume = agent.pendingInterrupts.map((i) => ({ interruptId: i.id, status: "resolved", payload: { approved: true } }));
  const second = recorder();
  const result = await agent.runAgent({ runId: "js-approval-2", resume }, second.subscriber);
  return {
    firstTypes: first.events.map((e) => e.type),
    outcome: finished.outcome,
    interrupts,
    secondTypes: second.events.map((e) => e.type),
    toolResults: second.events.filter((e) => e.type === "TOOL_CALL_RESULT").map((e) => e.content),
    text: textOf(second.events),
    result: result.result,
    pendingAfter: agent.pendingInterrupts.length,
  };
}

// The first connection is cut after `cutAfter` SSE messages; the reconnect (GET, Last-Event-ID)
// is parsed by the client's own HTTP transport and SSE parser.
async function reconnect() {
  const cutAfter = Number(process.env.CUT_AFTER || "6");
  const ids = [];
  const cutting = async (url, init) => {
    const response = await fetch(url, init);
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let seen = 0;
    let pending = "";
    const body = new ReadableStream({
      async pull(controller) {
        if (seen >= cutAfter) { controller.close(); reader.cancel(); return; }
        const { value, done } = await reader.read();
        if (done) { controller.close(); return; }
        pending += decoder.decode(value, { stream: true });
        let cut = -1;
        let at = 0;
        while ((cut = pending.indexOf("\n\n", at)) >= 0 && seen < cutAfter) {
          const block = pending.slice(at, cut);
          const id = block.split("\n").find((l) => l.startsWith("id:"));
          if (block.includes("data:")) { seen += 1; if (id) ids.push(id.slice(3).trim()); }
          at = cut + 2;
        }
        controller.enqueue(new TextEncoder().encode(pending.slice(0, at)));
        pending = pending.slice(at);
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  const agent = agentFor(process.env.AGENT || "slow", cutting);
  agent.addMessage({ id: "js-u3", role: "user", content: "Tell me slowly" });
  const first = recorder();
  let firstError = null;
  try {
    await agent.runAgent({ runId: "js-reconnect-1" }, first.subscriber);
  } catch (error) {
    firstError = String(error);
  }
  const lastId = ids.at(-1);
  const url = `${base}/agui/${process.env.AGENT || "slow"}/threads/${threadId}/events`;
  const rest = [];
  await new Promise((resolve, reject) => {
    transformHttpEventStream(runHttpRequest(() => fetch(url, { headers: { ...headers, "Last-Event-ID": lastId } })))
      .subscribe({ next: (e) => rest.push(e), error: reject, complete: resolve });
  });
  return {
    firstTypes: first.events.map((e) => e.type),
    firstError,
    lastId,
    restTypes: rest.map((e) => e.type),
    text: textOf(first.events) + textOf(rest),
    result: rest.at(-1)?.result,
  };
}

const scenarios = { full, approval, reconnect };
const outcome = await scenarios[process.argv[2]]();
process.stdout.write(JSON.stringify(outcome) + "\n");
