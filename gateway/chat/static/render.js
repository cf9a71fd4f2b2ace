// DOM for the conversation: the saved transcript (from /api/threads/...) and the live run
// (AG-UI events as they arrive).

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value);
  }
  node.append(...children.filter((child) => child !== null && child !== undefined));
  return node;
}

export function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

function asText(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}

export function toolCard(callId, name, args) {
  return el(
    "li",
    { class: "tool-call", "data-call-id": callId },
    el("span", { class: "name" }, name || "tool"),
    el("pre", { class: "args" }, args ? pretty(args) : ""),
    el("pre", { class: "result", hidden: "" }),
  );
}

export function showResult(card, content) {
  const result = card.querySelector(".result");
  result.textContent = asText(content);
  result.hidden = false;
}

// The saved thread's entries (`onFork(seq)` forks after one): messages (`files(attachments)` shows
// a message's files), tool calls with their results, context ops (a fork shows the context it
// started from).
export function transcriptItems(entries, onFork, files = () => null) {
  const items = [];
  const cards = new Map();
  const forkButton = (seq) => el("button", { class: "fork", type: "button", title: "Fork from here", onclick: () => onFork(seq) }, "fork");
  const add = (message, seq) => {
    if (message.role === "tool") {
      const card = cards.get(message.tool_call_id);
      if (card) showResult(card, message.content);
      else items.push(el("li", { class: "msg note", "data-seq": seq }, `tool result: ${message.content}`));
      return;
    }
    if (message.content || message.thinking || message.role === "user") {
      const attrs = { class: `msg ${message.role}`, "data-seq": seq };
      const thinking = message.thinking ? el("div", { class: "thinking" }, message.thinking) : null;
      const text = el("div", { class: "text" }, message.content);
      items.push(el("li", attrs, thinking, text, files(message.attachments), seq === null ? null : forkButton(seq)));
    }
    for (const call of message.tool_calls || []) {
      const card = toolCard(call.id, call.name, call.arguments);
      cards.set(call.id, card);
      items.push(card);
    }
  };
  for (const entry of entries) {
    if (entry.kind !== "op") {
      add(entry, entry.seq);
      continue;
    }
    const label = entry.op === "fork" ? "forked: the conversation so far" : `context ${entry.op}${entry.reason ? ` (${entry.reason})` : ""}`;
    items.push(el("li", { class: "msg note", "data-seq": entry.seq }, label, forkButton(entry.seq)));
    for (const message of entry.context || []) add(message, null);
  }
  return items;
}

// The live run: one element per message and tool call, updated in place.
export class LiveView {
  constructor(list) {
    this.list = list;
    this.messages = new Map();
    this.calls = new Map();
    this.callArgs = new Map();
  }

  clear() {
    this.list.replaceChildren();
    this.messages.clear();
    this.calls.clear();
    this.callArgs.clear();
  }

  note(text, kind = "note") {
    this.list.append(el("li", { class: `msg ${kind}` }, text));
  }

  user(text, files = null) {
    this.list.append(el("li", { class: "msg user" }, el("div", { class: "text" }, text), files));
  }

  message(id, role = "assistant") {
    let node = this.messages.get(id);
    if (!node) {
      node = el("li", { class: `msg ${role}`, "data-message-id": id }, el("div", { class: "thinking", hidden: "" }), el("div", { class: "text" }));
      this.messages.set(id, node);
      this.list.append(node);
    }
    return node;
  }

  call(id, name) {
    let card = this.calls.get(id);
    if (!card) {
      card = toolCard(id, name, "");
      this.calls.set(id, card);
      this.callArgs.set(id, "");
      this.list.append(card);
    }
    return card;
  }

  apply(event) {
    switch (event.type) {
      case "TEXT_MESSAGE_START":
        this.message(event.messageId, event.role === "user" ? "user" : "assistant");
        break;
      case "TEXT_MESSAGE_CONTENT":
      case "TEXT_MESSAGE_CHUNK":
        this.message(event.messageId).querySelector(".text").append(event.delta || "");
        break;
      case "REASONING_MESSAGE_CONTENT":
      case "REASONING_MESSAGE_CHUNK": {
        const thinking = this.message(event.messageId).querySelector(".thinking");
        thinking.hidden = false;
        thinking.append(event.delta || "");
        break;
      }
      case "TOOL_CALL_START":
        this.call(event.toolCallId, event.toolCallName);
        break;
      case "TOOL_CALL_ARGS":
      case "TOOL_CALL_CHUNK": {
        const card = this.call(event.toolCallId, event.toolCallName);
        const args = this.callArgs.get(event.toolCallId) + (event.delta || "");
        this.callArgs.set(event.toolCallId, args);
        card.querySelector(".args").textContent = args;
        break;
      }
      case "TOOL_CALL_END": {
        const card = this.call(event.toolCallId);
        card.querySelector(".args").textContent = pretty(this.callArgs.get(event.toolCallId));
        break;
      }
      case "TOOL_CALL_RESULT":
        showResult(this.call(event.toolCallId), event.content);
        break;
      case "RUN_ERROR":
        this.note(`error${event.code ? ` (${event.code})` : ""}: ${event.message}`, "error");
        break;
      default:
        break;
    }
  }
}
