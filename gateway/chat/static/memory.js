// The memory panel: what the open conversation's agent remembers of the caller (GET /api/memory/{agent}:
// a page by key, or with a query the best matches), a search box, and Forget (DELETE .../items/{key}).
// A token without `memory:read` (or a store that is down) shows its refusal in the panel, not as the
// page's error: the conversation works without memory.

import * as api from "./api.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);
const PAGE = 50;
const SEARCH = 10;

export class MemoryPanel {
  // `agent()` is the open conversation's agent; `guarded(action)` shows failures.
  constructor(agent, guarded) {
    this.agent = agent;
    this.guarded = guarded;
    this.query = "";
    $("memory-form").addEventListener("submit", (event) => {
      event.preventDefault();
      this.query = $("memory-query").value.trim();
      void this.load();
    });
  }

  path(rest = "") {
    return `/api/memory/${encodeURIComponent(this.agent())}${rest}`;
  }

  async load() {
    const list = $("memory");
    const query = this.query;
    const agent = this.agent();
    const params = query ? `?q=${encodeURIComponent(query)}&limit=${SEARCH}` : `?limit=${PAGE}`;
    let items;
    try {
      ({ items } = await api.getJson(this.path(params)));
    } catch (error) {
      if (!(error instanceof api.ApiError)) throw error;
      list.replaceChildren();
      $("memory-status").textContent = error.message;
      list.dataset.loaded = "refused";
      return;
    }
    if (agent !== this.agent() || query !== this.query) return; // another load is on its way
    $("memory-status").textContent = items.length
      ? ""
      : query ? "nothing matches" : `${agent} remembers nothing of you`;
    list.dataset.loaded = "yes";
    list.dataset.agent = agent;
    list.dataset.query = query;
    list.replaceChildren(...items.map((item) => this.item(item)));
  }

  item(item) {
    const forget = () => this.guarded(async () => {
      await api.deleteJson(this.path(`/items/${encodeURIComponent(item.key)}`));
      await this.load();
    });
    const updated = new Date(item.updated_at).toLocaleString();
    const title = item.expires_at ? `${updated}, forgotten after ${new Date(item.expires_at).toLocaleString()}` : updated;
    return el(
      "li",
      { "data-key": item.key, title },
      el("span", { class: "key" }, item.key),
      el("span", { class: "text" }, item.text),
      el("button", { type: "button", class: "forget", title: "Forget this", onclick: forget }, "Forget"),
    );
  }

  // Another agent is open: its memory, from the first page.
  async reset() {
    this.query = $("memory-query").value = "";
    await this.load();
  }
}
