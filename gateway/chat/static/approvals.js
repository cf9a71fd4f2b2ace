// Tool calls awaiting approval (an AG-UI run that ended with the `interrupt` outcome): approve,
// deny or edit the arguments inline; once every interrupt has an answer, `resume(entries)`.

import { el, pretty, toolCard } from "./render.js";

export class Approvals {
  constructor(live, resume, showError) {
    this.live = live;
    this.resume = resume;
    this.showError = showError;
    this.interrupts = [];
    this.decisions = new Map(); // interrupt id -> resume entry
  }

  clear() {
    this.interrupts = [];
    this.decisions.clear();
  }

  ask(interrupts) {
    this.interrupts = interrupts;
    this.decisions.clear();
    for (const interrupt of interrupts) this.#controls(interrupt);
  }

  #card(interrupt, args) {
    const callId = interrupt.toolCallId || interrupt.id;
    let card = this.live.calls.get(callId);
    if (!card) {
      const payload = interrupt.payload || interrupt.metadata || {};
      card = toolCard(callId, payload.tool || payload.name, JSON.stringify(args));
      this.live.calls.set(callId, card);
      this.live.list.append(card);
    }
    return card;
  }

  #controls(interrupt) {
    const payload = interrupt.payload || interrupt.metadata || {};
    const args = payload.arguments ?? payload.args ?? {};
    const card = this.#card(interrupt, args);
    const decide = (answer) => this.#decided(interrupt.id, card, answer);
    const editor = el("textarea", { class: "edit-args", rows: "3", hidden: "" });
    editor.value = pretty(typeof args === "string" ? args : JSON.stringify(args));
    const edit = el("button", { type: "button", class: "edit" }, "Edit arguments");
    edit.addEventListener("click", () => {
      if (editor.hidden) {
        editor.hidden = false;
        edit.textContent = "Approve edited";
        return;
      }
      try {
        decide({ approved: true, arguments: JSON.parse(editor.value) });
      } catch (error) {
        this.showError(`the arguments are not JSON: ${error.message}`);
      }
    });
    card.querySelector(".decision")?.remove();
    card.append(
      el(
        "div",
        { class: "decision" },
        el("span", { class: "verdict" }, interrupt.message || "awaiting approval"),
        el("button", { type: "button", class: "approve", onclick: () => decide({ approved: true }) }, "Approve"),
        el("button", { type: "button", class: "deny", onclick: () => decide({ approved: false, reason: "denied in the chat page" }) }, "Deny"),
        edit,
        editor,
      ),
    );
  }

  #decided(interruptId, card, payload) {
    this.decisions.set(interruptId, { interruptId, status: "resolved", payload });
    const verdict = payload.approved ? (payload.arguments ? "approved with edited arguments" : "approved") : "denied";
    card.querySelector(".decision").replaceChildren(el("span", { class: "verdict" }, verdict));
    if (this.interrupts.every((interrupt) => this.decisions.has(interrupt.id))) {
      const entries = [...this.decisions.values()];
      this.clear();
      this.resume(entries);
    }
  }
}
