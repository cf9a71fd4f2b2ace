// Edit and regenerate as branches (docs/branches.md), and the "‹ 2 / 3 ›" between them.
// A branch forks a thread right before one of its user messages (POST .../fork with `branch`:
// recorded in the family, nothing asked), then the page opens it and asks there the edited text,
// or the same one, with the message's files. The original thread is never changed.
//
// Every alternative of a message is a branch of the same place, its *slot*: the thread it is an
// entry of and its seq, or, for the message a branch was asked in place of, that branch's place
// in its parent. So a message edited twice, on the original or on a branch, has siblings, never
// a chain; the family's listing (GET .../branches) says which threads replace which slot.

import * as api from "./api.js";
import { el } from "./render.js";

function threadPath(agent, threadId, rest = "") {
  return `/api/threads/${encodeURIComponent(agent)}/${encodeURIComponent(threadId)}${rest}`;
}

export class Branches {
  // `open(agent, threadId)` shows a thread; `ask(text, attachments, runId)` asks it in the open
  // thread; `guarded(action)` shows failures.
  constructor(open, ask, guarded) {
    this.open = open;
    this.ask = ask;
    this.guarded = guarded;
    this.family = null; // the open thread's family (its listing), or null
    this.shown = null; // {agent, threadId, entries} of the transcript
  }

  // The open thread's family: null for a thread that does not exist yet.
  async load(agent, threadId) {
    try {
      return await api.getJson(threadPath(agent, threadId, "/branches"));
    } catch (error) {
      if (error.status === 404) return null;
      throw error;
    }
  }

  // The thread a message sent to `threadId` reaches: a family's root sends it to its newest branch.
  reaches(threadId) {
    const family = this.family;
    return family && family.thread_id === threadId && family.head ? family.head : threadId;
  }

  // The branch the open thread is, if it is one.
  #own() {
    const { threadId } = this.shown;
    return (this.family?.branches || []).find((b) => b.kind !== "root" && b.thread_id === threadId) || null;
  }

  // The user message the open branch was asked in place of.
  #inPlace(entries) {
    const own = this.#own();
    if (!own) return null;
    const users = entries.filter((e) => e.kind === "message" && e.role === "user");
    return users.find((e) => e.request_id === own.request_id) || users[0] || null;
  }

  #slot(entry) {
    const own = this.#own();
    if (own && entry === this.#inPlace(this.shown.entries)) return { threadId: own.forked_from, seq: own.message_seq };
    return { threadId: this.shown.threadId, seq: entry.seq };
  }

  // The threads that are alternatives of `entry` (its slot's thread first, then its branches, oldest first).
  #alternatives(entry) {
    const at = (threadId, seq) => [
      threadId,
      ...(this.family?.branches || []).filter((b) => b.kind !== "root" && b.forked_from === threadId && b.message_seq === seq).map((b) => b.thread_id),
    ];
    const slot = this.#slot(entry);
    const found = at(slot.threadId, slot.seq);
    if (slot.threadId !== this.shown.threadId) found.push(...at(this.shown.threadId, entry.seq).slice(1)); // branches of a branch's own message
    return [...new Set(found.filter(Boolean))];
  }

  // Edit buttons and "‹ 2 / 3 ›" on the user messages of `items` (the transcript's), Regenerate on
  // the last answer; `entries` are the thread's, `busy` whether it runs a request.
  decorate(agent, threadId, entries, family, items, busy) {
    this.family = family;
    this.shown = { agent, threadId, entries };
    const bySeq = new Map(entries.map((e) => [e.seq, e]));
    const messages = items.filter((item) => item.matches(".msg") && item.dataset.seq && bySeq.get(Number(item.dataset.seq))?.kind === "message");
    for (const item of messages) {
      const entry = bySeq.get(Number(item.dataset.seq));
      if (entry.role !== "user") continue;
      const controls = el("div", { class: "branch-controls" }, this.#nav(agent, threadId, entry));
      if (!busy) controls.append(el("button", { type: "button", class: "edit", title: "Edit: ask it again, changed, on a new branch", onclick: () => this.#edit(item, entry) }, "edit"));
      item.append(controls);
    }
    const lastAnswer = [...messages].reverse().find((item) => bySeq.get(Number(item.dataset.seq)).role === "assistant");
    const lastUser = [...entries].reverse().find((e) => e.kind === "message" && e.role === "user");
    if (!busy && lastAnswer && lastUser && lastUser.seq < Number(lastAnswer.dataset.seq)) {
      const regenerate = () => this.guarded(() => this.#branch("regenerate", lastUser, lastUser.content));
      lastAnswer.append(el("button", { type: "button", class: "regenerate", title: "Ask it again on a new branch", onclick: regenerate }, "regenerate"));
    }
  }

  #nav(agent, threadId, entry) {
    const threads = this.#alternatives(entry);
    if (threads.length < 2) return null;
    const at = threads.indexOf(threadId);
    const go = (to) => () => this.guarded(() => this.open(agent, threads[to]));
    return el(
      "span",
      { class: "branch-nav" },
      el("button", { type: "button", class: "prev", title: "The previous version", disabled: at <= 0 ? "" : null, onclick: go(at - 1) }, "‹"),
      el("span", { class: "position" }, `${at + 1} / ${threads.length}`),
      el("button", { type: "button", class: "next", title: "The next version", disabled: at >= threads.length - 1 ? "" : null, onclick: go(at + 1) }, "›"),
    );
  }

  #edit(item, entry) {
    const text = item.querySelector(".text");
    if (item.querySelector(".editor")) return;
    const editor = el("textarea", { class: "editor", rows: "3" });
    editor.value = entry.content;
    const close = () => {
      form.remove();
      text.hidden = false;
    };
    const save = () => {
      const edited = editor.value.trim();
      if (!edited) return;
      void this.guarded(() => this.#branch("edit", entry, edited));
    };
    const form = el(
      "div",
      { class: "edit-form" },
      editor,
      el("button", { type: "button", class: "save", onclick: save }, "Save and ask"),
      el("button", { type: "button", class: "cancel", onclick: close }, "Cancel"),
    );
    text.hidden = true;
    text.after(form);
    editor.focus();
  }

  // A branch of `entry`'s slot asking `text` with the message's files, opened.
  async #branch(kind, entry, text) {
    const { agent } = this.shown;
    const slot = this.#slot(entry);
    const made = await api.postJson(threadPath(agent, slot.threadId, "/fork"), { branch: kind, message_seq: slot.seq, text });
    await this.open(made.agent, made.thread_id);
    await this.ask(made.text, entry.attachments || [], made.request_id);
  }
}
