#include "launcher/live_page.h"

namespace hvd::launcher {

const char* LivePageHtml() {
  return R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>hvd job</title>
<style>
body { font-family: sans-serif; margin: 1em 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ccc; padding: .2em .6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.bad { background: #f8d0d0; color: #900; font-weight: bold; }
tr.straggler td:first-child { background: #ffe08a; font-weight: bold; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.charts div { width: 30em; height: 14em; }
#error { color: #900; }
#flight-lines { font-family: monospace; white-space: pre-wrap;
                background: #fff3cd; padding: .5em; }
#lines:empty { display: none; }
#lines { font-family: monospace; white-space: pre-wrap; background: #f4f4f4;
         padding: .5em; max-height: 16em; overflow-y: auto; }
</style>
<script src="/chart.js"></script>
</head><body>
<h1>hvd job <span id="job-id"></span></h1>
<p id="job"></p>
<p id="error"></p>
<p id="timeline" hidden><a href="/timeline.json" download="timeline.json">The
timeline so far</a> (HOROVOD_TIMELINE: open it in Perfetto or
chrome://tracing).</p>
<h2>Health, last second</h2>
<table id="health"><thead><tr><th>host</th><th>step</th>
<th>allreduce share</th><th>bus</th><th>CPU</th><th>memory</th>
<th class="gpu" hidden>GPU</th><th class="gpu" hidden>GPU memory</th></tr></thead>
<tbody></tbody></table>
<table id="ranks"><thead><tr><th>rank</th><th>host</th><th>step</th>
<th>allreduce share</th><th>bus</th><th>memory</th>
<th class="gpu" hidden>GPU</th><th class="gpu" hidden>GPU memory</th></tr></thead>
<tbody></tbody></table>
<p>Healthy: allreduce under 20 % of a step, CPU busy over 70 %, memory
under 90 % full.</p>
<p id="stragglers"></p>
<div id="flight" hidden><h2>Flight recorder report
<span id="flight-n"></span></h2><div id="flight-lines"></div></div>
<h2>Members</h2>
<table id="members"><thead><tr><th>rank</th><th>host</th><th>slot</th>
<th>generation</th><th>state</th></tr></thead><tbody></tbody></table>
<h2>The launcher said</h2>
<div id="lines"></div>
<h2>Over the job</h2>
<p id="no-charts"></p>
<div class="charts"><div><canvas id="chart-step"></canvas></div>
<div><canvas id="chart-bus"></canvas></div>
<div><canvas id="chart-host-bus"></canvas></div>
<div><canvas id="chart-share"></canvas></div></div>
<script>
"use strict";
// The page keeps the series it has and asks for the samples after its
// newest (?since=T): a poll carries one second's worth.
const charts = {};
const kept = {t: [], hosts: {}, ranks: {}};
const KEEP = 3600;
const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
let job = null, lastLine = 0, lastFlight = 0;
function pct(v) { return v === null ? "-" : (100 * v).toFixed(0) + " %"; }
// A row (an array in the state's columns' order) as an object, and its
// columns out of range as a set.
function named(columns, row) {
  const o = {bad: new Set()};
  columns.forEach((c, i) => { o[c] = row[i]; });
  columns.forEach((c, i) => { if (o.bad_mask & (1 << i)) o.bad.add(c); });
  return o;
}
function cell(row, text, bad) {
  const td = row.insertCell();
  td.textContent = text;
  if (bad) td.className = "bad";
}
// GPU columns appear once a rank computes on a GPU (healthy: busy over
// 70 %, memory under 90 % full).
let gpus = false;
function figures(row, h, cpu) {
  cell(row, h.step === null ? "no steps" : h.step.toFixed(3) + " s");
  cell(row, pct(h.ar), h.bad.has("ar"));
  cell(row, h.bus === null ? "-" : (h.bus / 1e9).toFixed(2) + " GB/s");
  if (cpu) cell(row, pct(h.cpu), h.bad.has("cpu"));
  cell(row, pct(h.mem), h.bad.has("mem"));
  if (gpus) {
    cell(row, pct(h.gpu), h.bad.has("gpu"));
    cell(row, pct(h.gmem), h.bad.has("gmem"));
  }
}
function showHealth(s) {
  const columns = s.columns.map(c => c === "bad" ? "bad_mask" : c);
  const hosts = s.hosts.map(r => named(columns, r));
  const ranks = s.ranks.map(r => named(columns, r));
  for (const r of ranks) r.straggler = r.rank === s.straggler;
  gpus = hosts.concat(ranks).some(h => h.gpu !== null || h.gmem !== null);
  for (const th of document.querySelectorAll("th.gpu")) th.hidden = !gpus;
  const body = document.querySelector("#health tbody");
  body.replaceChildren();
  for (const h of hosts) {
    const row = body.insertRow();
    row.dataset.host = h.host;
    cell(row, h.host, false);
    figures(row, h, true);
  }
  const rbody = document.querySelector("#ranks tbody");
  rbody.replaceChildren();
  for (const r of ranks) {
    const row = rbody.insertRow();
    row.dataset.rank = r.rank;
    if (r.straggler) row.className = "straggler";
    cell(row, r.rank + (r.straggler ? " (straggler)" : ""), false);
    cell(row, r.host, false);
    figures(row, r, false);
  }
}
// Appends a poll's samples to what the page keeps (a name new to it gets
// nulls before, a name missing from the poll nulls for its samples).
function keep(series) {
  const before = kept.t.length, n = series.t.length;
  kept.t.push(...series.t);
  for (const kind of ["hosts", "ranks"]) {
    const have = kept[kind];
    for (const [name, lines] of Object.entries(series[kind])) {
      if (!have[name]) have[name] = {};
      for (const [key, values] of Object.entries(lines)) {
        if (!have[name][key]) have[name][key] = new Array(before).fill(null);
        have[name][key].push(...values);
      }
    }
    for (const lines of Object.values(have)) {
      for (const values of Object.values(lines)) {
        while (values.length < before + n) values.push(null);
        if (values.length > KEEP) values.splice(0, values.length - KEEP);
      }
    }
  }
  if (kept.t.length > KEEP) kept.t.splice(0, kept.t.length - KEEP);
}
function chart(id, title, lines, key, scale) {
  if (typeof Chart === "undefined") return;
  const datasets = Object.entries(lines).map(([name, s], i) => ({
    label: name, data: s[key].map(v => v === null ? null : v * scale),
    borderColor: palette[i % palette.length],
    backgroundColor: palette[i % palette.length],
    pointRadius: 0, spanGaps: false}));
  const labels = kept.t.map(x => x.toFixed(0));
  if (!charts[id]) {
    charts[id] = new Chart(document.getElementById(id), {type: "line",
      data: {labels, datasets}, options: {animation: false,
      maintainAspectRatio: false,
      plugins: {title: {display: true, text: title}}}});
  } else {
    charts[id].data.labels = labels;
    charts[id].data.datasets = datasets;
    charts[id].update();
  }
}
function showMembers(members) {
  const body = document.querySelector("#members tbody");
  body.replaceChildren();
  for (const [rank, host, slot, generation, exit] of members) {
    const row = body.insertRow();
    row.dataset.member = rank;
    for (const v of [rank, host, slot, generation || "not joined"]) {
      cell(row, String(v), false);
    }
    cell(row, exit === null ? "running" : "exited " + exit, exit !== null &&
         exit !== 0);
  }
}
function showLines(lines) {
  const box = document.getElementById("lines");
  for (const [n, text] of lines) {
    const div = document.createElement("div");
    div.textContent = text;
    box.appendChild(div);
    lastLine = n;
  }
  while (box.childElementCount > 200) box.firstChild.remove();
  box.scrollTop = box.scrollHeight;
}
async function refresh() {
  try {
    const since = kept.t.length ? "since=" + kept.t[kept.t.length - 1] : "";
    const r = await fetch("/api/state?" + since + "&lines=" + lastLine +
                          "&flight=" + lastFlight);
    const s = await r.json();
    if (s.job) job = s.job;
    document.getElementById("job-id").textContent = job.id;
    document.getElementById("job").textContent =
      job.command.join(" ") + " on " + job.hosts.join(",") + ", " +
      job.size + " ranks, running " + s.run_s.toFixed(0) + " s";
    showHealth(s);
    // When the first state was drawn, from the page's start (the goal: 1 s).
    if (!document.body.dataset.firstStateMs) {
      document.body.dataset.firstStateMs = performance.now().toFixed(0);
    }
    if (s.members) showMembers(s.members);
    if (s.lines) showLines(s.lines);
    document.getElementById("timeline").hidden = !s.timeline;
    if (s.flight) {
      lastFlight = s.flight.n;
      document.getElementById("flight").hidden = false;
      document.getElementById("flight-n").textContent = "(dump " + s.flight.n +
                                                        ")";
      document.getElementById("flight-lines").textContent =
        s.flight.lines.join("\n");
    }
    document.getElementById("stragglers").textContent =
      s.stragglers ? "Stragglers: " + s.stragglers : "";
    keep(s.series);
    const ranks = {};
    for (const [r, v] of Object.entries(kept.ranks)) ranks["rank " + r] = v;
    chart("chart-step", "step time (s), by rank", ranks, "step", 1);
    chart("chart-bus", "allreduce bus bandwidth (GB/s), by rank", ranks,
          "bus", 1e-9);
    chart("chart-host-bus", "allreduce bus bandwidth (GB/s), by host",
          kept.hosts, "bus", 1e-9);
    chart("chart-share", "allreduce share of a step (%), by host",
          kept.hosts, "ar", 100);
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent =
      "the job does not answer (" + e + "); it may have ended";
  }
}
if (typeof Chart === "undefined") {
  document.getElementById("no-charts").textContent =
    "No charts: Chart.js did not load (install Debian's libjs-chart.js " +
    "on the launcher's machine).";
}
// The next poll a second after the last answer (a slow one never overlaps).
async function poll() {
  await refresh();
  setTimeout(poll, 1000);
}
poll();
</script>
</body></html>
)html";
}

}  // namespace hvd::launcher
