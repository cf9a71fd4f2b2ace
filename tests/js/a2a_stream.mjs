// One full streamed A2A task through the official JavaScript client (@a2a-js/sdk), then tasks/get.
// Usage: node a2a_stream.mjs <agent base url> <token> <question>
// Prints one JSON object: the events' kinds, the streamed text, the answer artifact, the final state.
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory } from "@a2a-js/sdk/client";

const [baseUrl, token, question] = process.argv.slice(2);
const authedFetch = (input, init = {}) =>
  fetch(input, { ...init, headers: { ...(init.headers ?? {}), Authorization: `Bearer ${token}` } });

const factory = new ClientFactory(
  ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authedFetch })],
    cardResolver: new DefaultAgentCardResolver({ fetchImpl: authedFetch }),
  }),
);
const client = await factory.createFromUrl(`${baseUrl}/.well-known/agent-card.json`, "");

const message = {
  messageId: crypto.randomUUID(),
  role: 1, // Role.ROLE_USER
  contextId: `js-${crypto.randomUUID().slice(0, 8)}`,
  parts: [{ content: { $case: "text", value: question } }],
};
const kinds = [];
let text = "";
let answer = null;
let state = null;
let taskId = null;
for await (const event of client.sendMessageStream({ message })) {
  const payload = event.payload;
  kinds.push(payload.$case);
  if (payload.$case === "task") {
    taskId = payload.value.id;
    state = payload.value.status.state;
  } else if (payload.$case === "statusUpdate") {
    state = payload.value.status.state;
    if (payload.value.metadata?.delta) {
      for (const part of payload.value.status.message?.parts ?? []) {
        if (part.content?.$case === "text") text += part.content.value;
      }
    }
  } else if (payload.$case === "artifactUpdate" && payload.value.artifact.name === "answer") {
    answer = payload.value.artifact.parts.map((p) => p.content?.value ?? "").join("");
  }
}
const task = await client.getTask({ id: taskId });
console.log(
  JSON.stringify({ kinds, text, answer, state, taskId, getState: task.status.state, artifacts: task.artifacts.length }),
);
