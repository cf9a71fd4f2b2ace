// Files through the official clients: the AI SDK (`ai`: DefaultChatTransport) and AG-UI
// (@ag-ui/client: HttpAgent); run by tests/gateway/test_attachments_clients.py.
//   echo '{"protocol": "aisdk"|"agui", "url": ..., "token": ..., "threadId": ..., "messageId": ...,
//          "text": ..., "files": [{"name", "type", "base64"?, "url"?, "kind"?}]}' | node attachments_client.mjs
// An AI SDK file part is what `convertFileListToFileUIParts` makes of a browser File (a data URL of
// its bytes; FileList does not exist in node, so the same part is built here), or a given `url`;
// an AG-UI part is a media part (`image`, `document`, ...) with a `data` source (or a `url` one).
// Prints one JSON object: the HTTP status, the streamed text, errors, and (AI SDK) the last message.
import { DefaultChatTransport, readUIMessageStream } from "ai";
import { HttpAgent } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const headers = { Authorization: `Bearer ${input.token}` };

const seen = { status: null, body: null };
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  seen.status = response.status;
  if (response.status !== 200) seen.body = await response.clone().text();
  return response;
}

async function aisdk() {
  const parts = input.files.map((f) => ({
    type: "file",
    mediaType: f.type,
    filename: f.name,
    url: f.url ?? `data:${f.type};base64,${f.base64}`,
  }));
  const message = { id: input.messageId, role: "user", parts: [...parts, { type: "text", text: input.text }] };
  const transport = new DefaultChatTransport({ api: input.url, headers, fetch: recordingFetch });
  let stream;
  try {
    stream = await transport.sendMessages({
      chatId: input.threadId, messages: [message], trigger: "submit-message",
      messageId: undefined, abortSignal: undefined,
    });
  } catch (error) {
    return { ...seen, failed: String(error?.message ?? error) };
  }
  const errors = [];
  let last = null;
  for await (const folded of readUIMessageStream({ stream, onError: (e) => errors.push(String(e)) })) last = folded;
  const text = (last?.parts ?? []).filter((p) => p.type === "text").map((p) => p.text).join("");
  return { ...seen, errors, text, message: last };
}

async function agui() {
  const agent = new HttpAgent({ url: input.url, headers, threadId: input.threadId, fetch: recordingFetch });
  const content = [
    { type: "text", text: input.text },
    ...input.files.map((f) => ({
      type: f.kind ?? (f.type.startsWith("image/") ? "image" : "document"),
      source: f.url ? { type: "url", value: f.url, mimeType: f.type } : { type: "data", value: f.base64, mimeType: f.type },
      metadata: { filename: f.name },
    })),
  ];
  agent.addMessage({ id: input.messageId, role: "user", content });
  const events = [];
  try {
    await agent.runAgent({ runId: input.messageId }, { onEvent: ({ event }) => { events.push(event); } });
  } catch (error) {
    return { ...seen, failed: String(error?.message ?? error), types: events.map((e) => e.type) };
  }
  const text = events.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");
  return { ...seen, types: events.map((e) => e.type), text };
}

const result = input.protocol === "aisdk" ? await aisdk() : await agui();
console.log(JSON.stringify(result));
