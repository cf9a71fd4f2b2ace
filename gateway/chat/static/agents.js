// The agents: the picker (code profiles and agents made at run time; for one made at run time, a
// version: its latest at each ask, or a pinned `name@N`), the Agents panel (make an agent, publish a
// version, list the versions, make one latest: /api/agents) and the "v2" on each answer.
// The gateway never returns a version's config, so the form is prefilled with the last config this
// browser published for the agent (kept in localStorage), else left as it is.

import * as api from "./api.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);
const CONFIG_KEY = "react-chat:agent-config:";

// `name` or `name@N` as {name, version} (version null: the latest at each ask).
export function parseAgent(agent) {
  const [name, version] = agent.split("@");
  return { name, version: version ? Number(version) : null };
}

// A "v2" on each answer of `items` (the transcript's, built from `entries`) whose request names
// the version that ran it (`records`: the thread read's `request_records`).
export function markVersions(items, entries, records) {
  const versions = new Map(records.filter((r) => r.agent_version != null).map((r) => [r.request_id, r.agent_version]));
  const bySeq = new Map(entries.filter((e) => e.kind === "message").map((e) => [String(e.seq), e]));
  for (const item of items) {
    const entry = item.classList.contains("assistant") ? bySeq.get(item.dataset.seq) : null;
    const version = entry && versions.get(entry.request_id);
    if (version) item.append(el("span", { class: "version", title: `answered by version ${version}` }, `v${version}`));
  }
}

export class AgentsPanel {
  // `current()` is the open conversation's agent (`name` or `name@N`); `pick(agent, sameThread)`
  // opens it (in the open thread: another version of the same agent); `guarded(action)` shows failures.
  constructor(current, pick, guarded) {
    this.current = current;
    this.pick = pick;
    this.guarded = guarded;
    this.details = new Map(); // name -> {name, kind, read_only, latest?}
    $("agent").addEventListener("change", () => this.pick($("agent").value, false));
    $("agent-version").addEventListener("change", () => {
      const version = $("agent-version").value;
      this.pick(version ? `${$("agent").value}@${version}` : $("agent").value, true);
    });
    $("agent-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.write(() => this.create());
    });
    $("agent-publish").addEventListener("click", () => this.write(() => this.publish()));
  }

  // Every agent in the picker, then the open one shown.
  async load() {
    const { details } = await api.getJson("/api/agents");
    this.details = new Map(details.map((d) => [d.name, d]));
    const option = (d) => el("option", { value: d.name, "data-kind": d.kind }, d.name);
    const group = (label, kind) => {
      const found = details.filter((d) => (d.kind === "profile") === (kind === "profile"));
      return found.length ? el("optgroup", { label }, ...found.map(option)) : null;
    };
    $("agent").replaceChildren(...[group("code profiles", "profile"), group("made at run time", "runtime")].filter(Boolean));
    await this.show(this.current());
  }

  // The picker and the panel on `agent` (`name` or `name@N`).
  async show(agent) {
    const { name, version } = parseAgent(agent);
    $("agent").value = name;
    const detail = this.details.get(name);
    const runtime = Boolean(detail) && detail.kind !== "profile";
    $("agent-version").hidden = !runtime;
    $("agent-publish").disabled = !runtime;
    $("agent-publish").textContent = runtime ? `Publish a version of ${name}` : "Publish version";
    this.versionOptions(null, null); // none until this agent's are read: no pin of another agent's version
    if (!runtime) {
      $("agent-versions").replaceChildren();
      $("agent-versions").dataset.agent = name;
      $("agent-versions-title").textContent = detail ? `${name}: a code profile (read-only)` : "";
      return;
    }
    this.prefill(name);
    let record;
    try {
      record = await api.getJson(`/api/agents/${encodeURIComponent(name)}`);
    } catch (error) {
      if (!(error instanceof api.ApiError)) throw error;
      this.status(error.message, "refused"); // the conversation works without the versions
      return;
    }
    if (this.current() !== agent) return; // another agent (or version) was picked meanwhile
    this.versionOptions(record, version);
    $("agent-versions-title").textContent = `${name}: ${record.versions.length} versions, latest v${record.latest}`;
    $("agent-versions").replaceChildren(...[...record.versions].reverse().map((v) => this.item(name, v, record.latest)));
    $("agent-versions").dataset.agent = name;
    $("agent-versions").dataset.latest = String(record.latest);
  }

  versionOptions(record, pinned) {
    const latest = record ? [el("option", { value: "" }, `latest (v${record.latest})`)] : [];
    const options = [...latest, ...(record?.versions || []).map((v) => el("option", { value: String(v.version) }, `v${v.version}`))];
    $("agent-version").replaceChildren(...options);
    $("agent-version").value = pinned ? String(pinned) : "";
  }

  item(name, version, latest) {
    const isLatest = version.version === latest;
    const makeLatest = () => this.write(async () => {
      await api.putJson(`/api/agents/${encodeURIComponent(name)}/latest`, { version: version.version });
      this.status(`${name}: v${version.version} is latest`);
    });
    return el(
      "li",
      { "data-version": String(version.version), class: isLatest ? "latest" : null },
      el("span", { class: "number" }, `v${version.version}`),
      el("span", { class: "note" }, version.note || ""),
      el("span", { class: "who", title: version.created_at }, `${version.created_by}, ${new Date(version.created_at).toLocaleString()}`),
      isLatest ? el("span", { class: "is-latest" }, "latest") : el("button", { type: "button", class: "make-latest", onclick: makeLatest }, "Make latest"),
    );
  }

  // A write of the panel: its refusal is shown in the panel, by name, and nothing else changes;
  // done, the picker and the versions are read again.
  async write(action) {
    await this.guarded(async () => {
      try {
        await action();
      } catch (error) {
        if (!(error instanceof api.ApiError)) throw error;
        this.status(error.message, "refused");
        return;
      }
      await this.load();
    });
  }

  status(text, state = "done") {
    $("agents-status").textContent = text;
    $("agents-status").dataset.state = state;
  }

  // The form's config: the JSON object, with the model and the system prompt given above it.
  config() {
    const text = $("agent-config").value.trim();
    let config;
    try {
      config = text ? JSON.parse(text) : {};
    } catch (error) {
      throw new api.ApiError(400, "invalid_input", `config: not JSON (${error.message})`);
    }
    if (!config || typeof config !== "object" || Array.isArray(config)) throw new api.ApiError(400, "invalid_input", "config: must be a JSON object");
    const model = $("agent-model").value.trim();
    const prompt = $("agent-prompt").value;
    return { ...config, ...(model ? { model } : {}), ...(prompt ? { system_prompt: prompt } : {}) };
  }

  body(extra) {
    const note = $("agent-note").value.trim();
    return { ...extra, config: this.config(), ...(note ? { note } : {}) };
  }

  async create() {
    const name = $("agent-name").value.trim();
    const body = this.body({ name });
    const made = await api.postJson("/api/agents", body);
    this.keep(name, body.config);
    this.status(`made ${made.name} v${made.version}`);
    this.pick(made.name, false);
  }

  async publish() {
    const name = $("agent").value;
    const body = this.body({});
    const published = await api.postJson(`/api/agents/${encodeURIComponent(name)}/versions`, body);
    this.keep(name, body.config);
    this.status(`published ${name} v${published.version} (latest)`);
  }

  keep(name, config) {
    localStorage.setItem(CONFIG_KEY + name, JSON.stringify(config));
  }

  // The form on `name`, with the last config published from here, if any.
  prefill(name) {
    if ($("agent-name").value === name) return; // the form is on it already: keep what is being typed
    $("agent-name").value = name;
    const known = JSON.parse(localStorage.getItem(CONFIG_KEY + name) || "null");
    if (!known) return;
    const { model, system_prompt: prompt, ...rest } = known;
    $("agent-model").value = model || "";
    $("agent-prompt").value = prompt || "";
    $("agent-config").value = Object.keys(rest).length ? JSON.stringify(rest) : "";
  }
}
