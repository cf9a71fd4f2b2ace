// The gateway's HTTP surface as the page uses it: the bearer token (kept in localStorage),
// JSON calls to /api, and AG-UI runs streamed from /agui.

import { readEvents } from "./sse.js";

const TOKEN_KEY = "react-chat:token";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(`${code}: ${message}`);
    this.status = status;
    this.code = code;
  }
}

export function token() {
  return localStorage.getItem(TOKEN_KEY) || "";
}

export function setToken(value) {
  if (value) localStorage.setItem(TOKEN_KEY, value);
  else localStorage.removeItem(TOKEN_KEY);
}

function headers(extra = {}) {
  const all = { ...extra };
  if (token()) all.Authorization = `Bearer ${token()}`;
  return all;
}

async function checked(response) {
  if (response.ok) return response;
  let code = "http_error";
  let message = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    if (body && body.error) ({ code, message } = body.error);
  } catch {
    // not JSON: keep the status line
  }
  throw new ApiError(response.status, code, message);
}

export async function getJson(path) {
  return (await checked(await fetch(path, { headers: headers() }))).json();
}

export async function postJson(path, body) {
  const init = {
    method: "POST",
    headers: headers({ "Content-Type": "application/json" }),
    body: JSON.stringify(body ?? {}),
  };
  return (await checked(await fetch(path, init))).json();
}

export async function putJson(path, body) {
  const init = { method: "PUT", headers: headers({ "Content-Type": "application/json" }), body: JSON.stringify(body ?? {}) };
  return (await checked(await fetch(path, init))).json();
}

// One file's bytes as the body (POST /api/files): its declared type, or none (the gateway reads the bytes).
export async function postBytes(path, blob) {
  const init = { method: "POST", headers: headers({ "Content-Type": blob.type || "application/octet-stream" }), body: blob };
  return (await checked(await fetch(path, init))).json();
}

export async function getBlob(path) {
  return (await checked(await fetch(path, { headers: headers() }))).blob();
}

export async function deleteJson(path) {
  return (await checked(await fetch(path, { method: "DELETE", headers: headers() }))).json();
}

function path(agent, rest = "") {
  return `/agui/${encodeURIComponent(agent)}${rest}`;
}

// Start (or resume) an AG-UI run; `onEvent(event, id)` gets each parsed event and its SSE id.
export async function run(agent, input, onEvent, signal) {
  const init = {
    method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
    body: JSON.stringify(input),
    signal,
  };
  await pump(await checked(await fetch(path(agent), init)), onEvent);
}

// Re-attach to a thread's request: after `lastEventId`, or from its start when null.
export async function attach(agent, threadId, lastEventId, onEvent, signal) {
  const extra = { Accept: "text/event-stream" };
  if (lastEventId) extra["Last-Event-ID"] = lastEventId;
  const url = path(agent, `/threads/${encodeURIComponent(threadId)}/events`);
  await pump(await checked(await fetch(url, { headers: headers(extra), signal })), onEvent);
}

async function pump(response, onEvent) {
  for await (const message of readEvents(response)) {
    let event;
    try {
      event = JSON.parse(message.data);
    } catch {
      continue; // not an AG-UI event
    }
    onEvent(event, message.id);
  }
}

export function randomId(prefix) {
  const bytes = crypto.getRandomValues(new Uint8Array(8));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
