// The official Vercel AI SDK client (npm `ai` 7: DefaultChatTransport + readUIMessageStream) against
// the gateway's UI message stream routes (/ai-sdk/{agent}); run by tests/aisdk/test_aisdk_js_client.py.
//   echo '{"url": ..., "token": ..., "chatId": ..., "messages": [...]}' | node aisdk_client.mjs
//   echo '{"url": ..., "token": ..., "chatId": ..., "resume": true}' | node aisdk_client.mjs
//   (with "trigger": "regenerate-message" and "messageId": ..., as useChat's regenerate() sends them)
// POSTs the chat request with the bearer token as the SDK does (or GETs the SDK's resume route,
// `{url}/{chatId}/stream`), folds the streamed chunks into UI messages the SDK's way, and prints
// one JSON object: the response's status and headers, every error chunk's text, and the UI
// message after each chunk's update (`messages`, the last one the whole answer); `resumed: null`
// when the resume route answered 204 (no stream).
import { DefaultChatTransport, readUIMessageStream } from "ai";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const seen = { status: null, headers: {} };
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  seen.status = response.status;
  for (const [name, value] of response.headers) seen.headers[name] = value;
  return response;
}

const transport = new DefaultChatTransport({
  api: input.url,
  headers: { Authorization: `Bearer ${input.token}` },
  fetch: recordingFetch,
});

const errors = [];
let stream;
try {
  stream = input.resume
    ? await transport.reconnectToStream({ chatId: input.chatId })
    : await transport.sendMessages({
        chatId: input.chatId,
        messages: input.messages,
        trigger: input.trigger ?? "submit-message", // `regenerate-message`: what regenerate() sends
        messageId: input.messageId ?? undefined, // regenerate({messageId}), sendMessage({..., messageId})
        abortSignal: undefined,
      });
} catch (error) {
  console.log(JSON.stringify({ ...seen, failed: String(error?.message ?? error) }));
  process.exit(0);
}
if (stream === null) {
  console.log(JSON.stringify({ ...seen, resumed: null }));
  process.exit(0);
}

const last = input.continueMessage ?? undefined; // an assistant message the stream continues
const messages = [];
for await (const message of readUIMessageStream({
  message: last,
  stream,
  onError: (error) => errors.push(String(error?.message ?? error)),
})) {
  messages.push(structuredClone(message));
}
console.log(JSON.stringify({ ...seen, errors, messages }));
