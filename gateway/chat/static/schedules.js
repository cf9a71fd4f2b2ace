// The schedules panel: the caller's schedules (GET /api/schedules), a form that schedules the
// current conversation (POST /api/schedules with its agent and thread), pause/unpause and trigger.

import * as api from "./api.js";
import { el } from "./render.js";

const $ = (id) => document.getElementById(id);

export class SchedulesPanel {
  // `current()` is {agent, threadId} of the open conversation; `guarded(action)` shows failures.
  constructor(current, guarded) {
    this.current = current;
    this.guarded = guarded;
    $("schedule-form").addEventListener("submit", (event) => {
      event.preventDefault();
      void this.guarded(() => this.create());
    });
  }

  async load() {
    const { schedules } = await api.getJson("/api/schedules");
    $("schedules").dataset.loaded = "yes";
    $("schedules").replaceChildren(...schedules.map((s) => this.item(s)));
  }

  item(schedule) {
    const id = encodeURIComponent(schedule.schedule_id);
    const when = schedule.cron || `every ${schedule.every_s} s`;
    const act = (verb) => () => this.guarded(async () => {
      await api.postJson(`/api/schedules/${id}/${verb}`, {});
      await this.load();
    });
    return el(
      "li",
      { "data-schedule": schedule.schedule_id, "data-paused": schedule.paused ? "yes" : "no" },
      el("span", { class: "name", title: schedule.message_preview }, `${schedule.schedule_id} · ${when}`),
      el("span", { class: "state" }, schedule.paused ? "paused" : `${schedule.firings} firings`),
      el("button", { type: "button", class: "pause", onclick: act(schedule.paused ? "unpause" : "pause") }, schedule.paused ? "Unpause" : "Pause"),
      el("button", { type: "button", class: "trigger", onclick: act("trigger") }, "Run now"),
    );
  }

  async create() {
    const { agent, threadId } = this.current();
    const message = $("schedule-message").value.trim();
    const every = $("schedule-every").value.trim();
    const body = { agent, thread_id: threadId, message };
    if (/^\d+$/.test(every)) body.every_s = Number(every);
    else body.cron = every;
    await api.postJson("/api/schedules", body);
    $("schedule-message").value = "";
    await this.load();
  }
}
