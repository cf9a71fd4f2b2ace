// Sign-in with the gateway's OpenID provider, when it has one (GET /api/identity names a client):
// the authorization code grant with PKCE in the browser (no secret), the code and later the
// refresh token traded through the gateway (POST /api/identity/token: the page only calls its own
// origin), renewal a minute before the token expires, and sign out (the provider's too, when it
// has an end-session endpoint). Without a provider the page keeps its Token field only.

import * as api from "./api.js";

const PENDING_KEY = "react-chat:signin"; // sessionStorage: state and verifier across the redirect
const SESSION_KEY = "react-chat:session"; // localStorage: the refresh token and the expiry
const RENEW_BEFORE_MS = 60_000;

let config = null;
let renewTimer = null;
let changed = () => {};

function base64url(bytes) {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString(bytes) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

function redirectUri() {
  return `${location.origin}/`;
}

function saved() {
  return JSON.parse(localStorage.getItem(SESSION_KEY) || "null");
}

async function trade(body) {
  const response = await fetch("/api/identity/token", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error ? `${answer.error.code}: ${answer.error.message}` : `HTTP ${response.status}`);
  return answer;
}

function keep(tokens) {
  api.setToken(tokens.access_token);
  const expiresAt = Date.now() + (tokens.expires_in ?? 300) * 1000;
  localStorage.setItem(SESSION_KEY, JSON.stringify({ refresh: tokens.refresh_token ?? null, expiresAt }));
  schedule();
  changed(true);
}

function schedule() {
  clearTimeout(renewTimer);
  const session = saved();
  if (!session || !session.refresh) return;
  renewTimer = setTimeout(renew, Math.max(0, session.expiresAt - Date.now() - RENEW_BEFORE_MS));
}

async function renew() {
  const session = saved();
  if (!session || !session.refresh) return;
  try {
    keep(await trade({ grant_type: "refresh_token", refresh_token: session.refresh }));
  } catch {
    forget();
    changed(false);
  }
}

function forget() {
  clearTimeout(renewTimer);
  localStorage.removeItem(SESSION_KEY);
  api.setToken("");
}

export async function signIn() {
  const state = randomString(16);
  const verifier = randomString(48);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ state, verifier, back: location.search }));
  const url = new URL(config.authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: "code",
    client_id: config.client_id,
    redirect_uri: redirectUri(),
    scope: config.scope,
    state,
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  }).toString();
  location.assign(url.toString());
}

export function signOut() {
  forget();
  changed(false);
  if (config && config.end_session_endpoint) {
    const url = new URL(config.end_session_endpoint);
    url.search = new URLSearchParams({ client_id: config.client_id, post_logout_redirect_uri: redirectUri() }).toString();
    location.assign(url.toString());
  }
}

// Read the gateway's sign-in, finish a sign-in coming back with ?code=, resume renewal.
// `onChange(signedIn)` follows the state; the answer says whether sign-in is offered at all.
export async function setUpSignIn(onChange) {
  config = await (await fetch("/api/identity")).json();
  if (!config.client_id) return false;
  changed = onChange;
  const params = new URL(location.href).searchParams;
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || "null");
  if ((params.has("code") || params.has("error")) && pending) {
    sessionStorage.removeItem(PENDING_KEY);
    history.replaceState(null, "", `/${pending.back || ""}`);
    if (params.get("error")) throw new Error(`sign-in refused: ${params.get("error")}`);
    if (params.get("state") !== pending.state) throw new Error("the sign-in came back with another state: sign in again");
    keep(await trade({ grant_type: "authorization_code", code: params.get("code"), code_verifier: pending.verifier, redirect_uri: redirectUri() }));
    return true;
  }
  const session = saved();
  if (session && session.refresh && session.expiresAt - Date.now() < RENEW_BEFORE_MS) await renew();
  else schedule();
  changed(Boolean(session && api.token()));
  return true;
}
