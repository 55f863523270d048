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
</style>
<script src="/chart.js"></script>
</head><body>
<h1>hvd job <span id="job-id"></span></h1>
<p id="job"></p>
<p id="error"></p>
<h2>Health, last second</h2>
<table id="health"><thead><tr><th>host</th><th>step</th>
<th>allreduce share</th><th>bus</th><th>CPU</th><th>memory</th></tr></thead>
<tbody></tbody></table>
<table id="ranks"><thead><tr><th>rank</th><th>host</th><th>step</th>
<th>allreduce share</th><th>bus</th><th>memory</th></tr></thead>
<tbody></tbody></table>
<p>Healthy: allreduce under 20 % of a step, CPU busy over 70 %, memory
under 90 % full.</p>
<p id="stragglers"></p>
<h2>Over the job</h2>
<p id="no-charts"></p>
<div class="charts"><div><canvas id="chart-step"></canvas></div>
<div><canvas id="chart-bus"></canvas></div>
<div><canvas id="chart-host-bus"></canvas></div>
<div><canvas id="chart-share"></canvas></div></div>
<script>
"use strict";
const charts = {};
const palette = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
function pct(v) { return v === null ? "-" : (100 * v).toFixed(0) + " %"; }
function cell(row, text, bad) {
  const td = row.insertCell();
  td.textContent = text;
  if (bad) td.className = "bad";
}
function figures(row, h, cpu) {
  cell(row, h.step_s === null ? "no steps" : h.step_s.toFixed(3) + " s");
  cell(row, pct(h.allreduce_share), h.marks.allreduce_share);
  cell(row, h.bus_bytes_per_s === null ? "-" :
       (h.bus_bytes_per_s / 1e9).toFixed(2) + " GB/s");
  if (cpu) cell(row, pct(h.cpu_share), h.marks.cpu_share);
  cell(row, pct(h.memory_share), h.marks.memory_share);
}
function showHealth(now, ranks) {
  const hosts = document.querySelector("#health tbody");
  hosts.replaceChildren();
  for (const h of now) {
    const row = hosts.insertRow();
    row.dataset.host = h.host;
    cell(row, h.host, false);
    figures(row, h, true);
  }
  const body = document.querySelector("#ranks tbody");
  body.replaceChildren();
  for (const r of ranks) {
    const row = body.insertRow();
    row.dataset.rank = r.rank;
    if (r.straggler) row.className = "straggler";
    cell(row, r.rank + (r.straggler ? " (straggler)" : ""), false);
    cell(row, r.host, false);
    figures(row, r, false);
  }
}
function chart(id, title, t, lines, field, scale) {
  if (typeof Chart === "undefined") return;
  const datasets = Object.entries(lines).map(([name, s], i) => ({
    label: name, data: s[field].map(v => v === null ? null : v * scale),
    borderColor: palette[i % palette.length],
    backgroundColor: palette[i % palette.length],
    pointRadius: 0, spanGaps: false}));
  const labels = t.map(x => x.toFixed(0));
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
async function refresh() {
  try {
    const r = await fetch("/api/state");
    const s = await r.json();
    document.getElementById("job-id").textContent = s.job.id;
    document.getElementById("job").textContent =
      s.job.command.join(" ") + " on " + s.job.hosts.join(",") + ", " +
      s.job.size + " ranks, running " + s.job.run_s.toFixed(0) + " s";
    showHealth(s.now, s.ranks);
    document.getElementById("stragglers").textContent =
      s.stragglers ? "Stragglers: " + s.stragglers : "";
    const t = s.series.t, ranks = {};
    for (const [r, v] of Object.entries(s.series.ranks)) ranks["rank " + r] = v;
    chart("chart-step", "step time (s), by rank", t, ranks, "step_s", 1);
    chart("chart-bus", "allreduce bus bandwidth (GB/s), by rank", t, ranks,
          "bus_bytes_per_s", 1e-9);
    chart("chart-host-bus", "allreduce bus bandwidth (GB/s), by host", t,
          s.series.hosts, "bus_bytes_per_s", 1e-9);
    chart("chart-share", "allreduce share of a step (%), by host", t,
          s.series.hosts, "allreduce_share", 100);
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
refresh();
setInterval(refresh, 1000);
</script>
</body></html>
)html";
}

}  // namespace hvd::launcher
