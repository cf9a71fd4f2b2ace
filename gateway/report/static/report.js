// The evaluation report page: the evaluations `?evals=a,b` names (or the field), read from
// GET /api/evals/{id}, compared with GET /api/evals/{a}/compare/{b}, and the caller's usage from
// GET /api/usage?group_by=agent,version,day. Every number shown is one of those answers'. The
// token is the chat page's (the same localStorage key: /static/api.js is the chat page's module).

import * as api from "/static/api.js";
import { setUpSignIn } from "/static/signin.js";
import { groupedBars, legend, strips } from "./charts.js";

const $ = (id) => document.getElementById(id);

function showError(error) {
  $("error").textContent = error instanceof Error ? error.message : String(error);
  $("error").hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").textContent = "";
}

const percent = (rate) => (typeof rate === "number" ? `${(rate * 100).toFixed(1)}%` : "-");
const usd = (value) => (typeof value === "number" ? `$${value.toFixed(6)}` : "-");
const seconds = (value) => (typeof value === "number" ? `${value.toFixed(3)} s` : "-");
const shown = (value) => (value === null || value === undefined ? "-" : typeof value === "string" ? value : JSON.stringify(value));
const labelOf = (view) => `${view.eval_id} (${view.agent})`;

function cell(text, className = "") {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function verdict(passed) {
  const td = document.createElement("td");
  const span = document.createElement("span");
  span.className = passed ? "pass" : "fail";
  span.textContent = passed ? "passed" : "failed";
  td.append(span);
  return td;
}

function headRow(names) {
  const tr = document.createElement("tr");
  for (const name of names) {
    const th = document.createElement("th");
    th.textContent = name;
    tr.append(th);
  }
  return tr;
}

function row(cells, data = {}) {
  const tr = document.createElement("tr");
  for (const [key, value] of Object.entries(data)) tr.dataset[key] = value;
  tr.append(...cells);
  return tr;
}

function ids() {
  return $("evals").value.split(",").map((id) => id.trim()).filter(Boolean);
}

function summaryTable(views) {
  const head = headRow(["evaluation", "agent", "dataset", "status", "cases", "passed", "failed", "pending", "pass rate", "cost", "latency p50", "latency max", "error"]);
  const rows = views.map((v) => {
    const s = v.summary;
    const rate = cell(percent(s.pass_rate));
    rate.dataset.passRate = String(s.pass_rate);
    return row(
      [cell(v.eval_id), cell(v.agent), cell(v.dataset), cell(v.status), cell(String(s.cases)), cell(String(s.passed)), cell(String(s.failed)), cell(String(s.pending)), rate, cell(usd(s.cost_usd)), cell(seconds(s.latency_s_p50)), cell(seconds(s.latency_s_max)), cell(v.error ?? "")],
      { eval: v.eval_id },
    );
  });
  $("summary").replaceChildren(head, ...rows);
}

function passRateChart(views) {
  const evaluators = [...new Set(views.flatMap((v) => Object.keys(v.summary.by_evaluator)))].sort();
  if (evaluators.length === 0) {
    $("pass-rates").textContent = "No evaluator has scored a case yet.";
    return;
  }
  const series = views.map((v) => ({
    name: labelOf(v),
    view: v,
    data: Object.fromEntries(Object.entries(v.summary.by_evaluator).map(([name, r]) => [name, r.pass_rate])),
  }));
  const svg = groupedBars({
    groups: evaluators,
    series,
    max: 1,
    format: (rate) => `${Math.round(rate * 100)}%`,
    className: "pass-rates",
    data: (s, name) => ({ "data-eval": s.view.eval_id, "data-evaluator": name, "data-pass-rate": String(s.data[name]) }),
  });
  $("pass-rates").replaceChildren(svg);
}

function stripChart(target, views, field, format) {
  if (!views.some((v) => v.cases.length)) {
    $(target).textContent = "No case has ended yet.";
    return;
  }
  const series = views.map((v) => ({
    name: v.eval_id,
    items: v.cases.map((c) => ({ label: c.name, value: c[field], data: { "data-field": field, "data-eval": v.eval_id, "data-case": c.name, "data-value": String(c[field]) } })),
  }));
  $(target).replaceChildren(strips({ series, format, className: "strip" }));
}

function scoresText(c) {
  const lines = Object.entries(c.scores).map(([name, value]) => `${name}: ${shown(value)}`);
  return lines.concat(Object.entries(c.reasons).map(([name, why]) => `${name} (why): ${why}`)).join("\n");
}

function casesTables(views) {
  const parts = views.flatMap((v) => {
    const title = document.createElement("h3");
    title.textContent = labelOf(v);
    const table = document.createElement("table");
    table.className = "cases";
    table.dataset.eval = v.eval_id;
    table.append(
      headRow(["case", "verdict", "run", "output", "scores", "cost", "duration"]),
      ...v.cases.map((c) =>
        row([cell(c.name), verdict(c.passed), cell(c.run_status), cell(shown(c.output), "output"), cell(scoresText(c), "scores"), cell(usd(c.cost_usd)), cell(seconds(c.duration_s))], { case: c.name }),
      ),
    );
    return [title, table];
  });
  $("cases").replaceChildren(...parts);
}

function comparisonTable(diff) {
  const { a, b } = { a: diff.a.eval_id, b: diff.b.eval_id };
  const title = document.createElement("h2");
  title.textContent = `What differs (${a} → ${b})`;
  if (diff.differences.length === 0) {
    const none = document.createElement("p");
    none.textContent = `No case differs between ${a} and ${b}.`;
    return [title, none];
  }
  const table = document.createElement("table");
  table.className = "differences";
  table.dataset.a = a;
  table.dataset.b = b;
  table.append(headRow(["case", `verdict (${a} → ${b})`, "output", "scores that differ"]));
  for (const d of diff.differences) {
    if (d.only_in) {
      const only = cell(`only in ${d.only_in}`);
      only.colSpan = 3;
      table.append(row([cell(d.name), only], { case: d.name }));
      continue;
    }
    const verdicts = cell(`${d.passed.a ? "passed" : "failed"} → ${d.passed.b ? "passed" : "failed"}`);
    const scores = Object.entries(d.scores).map(([name, s]) => `${name}: ${shown(s.a)} → ${shown(s.b)}`).join("\n");
    table.append(row([cell(d.name), verdicts, cell(`${shown(d.output.a)}\n→\n${shown(d.output.b)}`, "output"), cell(scores, "scores")], { case: d.name }));
  }
  return [title, table];
}

// Each id read on its own: a missing (or another principal's) evaluation is named beside the others.
async function loadEvals() {
  const wanted = ids();
  $("eval-errors").replaceChildren();
  $("download").hidden = true;
  if (wanted.length === 0) {
    $("report").hidden = true;
    return;
  }
  const answers = await Promise.all(wanted.map((id) => api.getJson(`/api/evals/${encodeURIComponent(id)}`).then((view) => ({ id, view }), (error) => ({ id, error }))));
  const views = [];
  for (const { id, view, error } of answers) {
    if (!error) {
      views.push(view);
      continue;
    }
    if (!(error instanceof api.ApiError)) throw error;
    const li = document.createElement("li");
    li.dataset.eval = id;
    li.dataset.code = error.code;
    li.textContent = `${id}: ${error.message}`;
    $("eval-errors").append(li);
  }
  $("report").hidden = views.length === 0;
  if (views.length === 0) return;
  summaryTable(views);
  legend($("legend"), views.map(labelOf));
  passRateChart(views);
  stripChart("cost", views, "cost_usd", usd);
  stripChart("latency", views, "duration_s", seconds);
  casesTables(views);
  const comparisons = [];
  for (const other of views.slice(1)) {
    const diff = await api.getJson(`/api/evals/${encodeURIComponent(views[0].eval_id)}/compare/${encodeURIComponent(other.eval_id)}`);
    comparisons.push(...comparisonTable(diff));
  }
  $("comparisons").replaceChildren(...comparisons);
  $("download").hidden = views.length > 2;
  $("download").dataset.path = `/api/evals/${encodeURIComponent(views[0].eval_id)}/report.html${views[1] ? `?with=${encodeURIComponent(views[1].eval_id)}` : ""}`;
  $("download").dataset.filename = `eval-${views[0].eval_id}.html`;
}

const seriesOf = (r) => (r.version === null || r.version === undefined ? r.agent : `${r.agent}@${r.version}`);

async function loadUsage() {
  const { rows } = await api.getJson("/api/usage?group_by=agent,version,day");
  $("usage-status").textContent = rows.length ? `${rows.length} rows` : "No usage in these days.";
  const days = [...new Set(rows.map((r) => r.day))].sort();
  const names = [...new Set(rows.map(seriesOf))].sort();
  const series = (field) => names.map((name) => ({ name, data: Object.fromEntries(rows.filter((r) => seriesOf(r) === name).map((r) => [r.day, r[field]])) }));
  const data = (field) => (s, day) => ({ "data-series": s.name, "data-day": day, [`data-${field.replace("_", "-")}`]: String(s.data[day]) });
  legend($("usage-legend"), names);
  if (rows.length) {
    $("usage-requests").replaceChildren(groupedBars({ groups: days, series: series("requests"), data: data("requests"), format: (n) => String(Math.round(n * 10) / 10), className: "usage-requests" }));
    $("usage-cost").replaceChildren(groupedBars({ groups: days, series: series("cost_usd"), data: data("cost_usd"), format: usd, className: "usage-cost" }));
  } else {
    $("usage-requests").replaceChildren();
    $("usage-cost").replaceChildren();
  }
  const head = headRow(["agent", "version", "day", "requests", "failed", "prompt tokens", "completion tokens", "cost", "latency p50 (ms)", "latency p99 (ms)"]);
  const body = rows.map((r) =>
    row(
      [cell(r.agent), cell(shown(r.version)), cell(r.day), cell(String(r.requests)), cell(String(r.failed)), cell(String(r.prompt_tokens)), cell(String(r.completion_tokens)), cell(usd(r.cost_usd)), cell(shown(r.latency_ms_p50)), cell(shown(r.latency_ms_p99))],
      { series: seriesOf(r), day: r.day },
    ),
  );
  $("usage-rows").replaceChildren(head, ...body);
}

async function load() {
  clearError();
  if (document.activeElement !== $("token")) $("token").value = api.token();
  const results = await Promise.allSettled([loadEvals(), loadUsage()]);
  const failed = results.find((r) => r.status === "rejected");
  if (failed) showError(failed.reason);
}

async function download() {
  const blob = await api.getBlob($("download").dataset.path);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(blob);
  link.download = $("download").dataset.filename;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
}

$("evals").value = new URL(location.href).searchParams.get("evals") ?? "";
$("evals-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const url = new URL(location.href);
  url.searchParams.set("evals", ids().join(","));
  history.replaceState(null, "", url.toString());
  void load();
});
$("token").addEventListener("change", () => {
  api.setToken($("token").value.trim());
  void load();
});
$("download").addEventListener("click", () => download().catch(showError));
// The chat page's sign-in keeps the token renewed here too (its refresh token, its key).
setUpSignIn(() => {
  if (document.activeElement !== $("token")) $("token").value = api.token();
})
  .catch(showError)
  .finally(() => void load());
