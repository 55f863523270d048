#include "rendezvous/jobs_page.h"

#include <nlohmann/json.hpp>

#include "common/random.h"

namespace hvd::rendezvous {

using nlohmann::json;

std::string JobsJson(const std::vector<JobSummary>& jobs,
                     const std::string& store, const Status& last_write) {
  json list = json::array();
  for (const JobSummary& j : jobs) {
    json members = json::array();
    for (const Member& m : j.members) {
      members.push_back({m.rank, m.host, m.slot, m.generation,
                         m.exit_status ? json(*m.exit_status) : json(nullptr)});
    }
    list.push_back(
        {{"id", j.id},
         {"elastic", j.elastic},
         {"size", j.size},
         {"epoch", j.epoch},
         {"members", std::move(members)},
         {"keys", j.keys},
         {"bytes", j.bytes},
         {"expires_in_s",
          j.expires_in_s < 0 ? json(nullptr) : json(j.expires_in_s)}});
  }
  return json({{"store",
                {{"kind", store},
                 {"healthy", last_write.ok()},
                 {"last_error", last_write.ok() ? "" : last_write.ToString()}}},
               {"jobs", std::move(list)}})
      .dump();
}

bool IsAdmin(const std::string& authorization, const std::string& admin_token) {
  const std::string prefix = "Bearer ";
  if (admin_token.empty() || authorization.rfind(prefix, 0) != 0) return false;
  return ConstantTimeEquals(authorization.substr(prefix.size()), admin_token);
}

const char* JobsPageHtml() {
  return R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>hvd-rendezvousd</title>
<style>
body { font-family: sans-serif; margin: 1em 2em; color: #222; }
table { border-collapse: collapse; margin: .5em 0; }
td, th { border: 1px solid #ccc; padding: .2em .6em; text-align: left; }
td.bad { background: #f8d0d0; color: #900; font-weight: bold; }
#error { color: #900; }
</style></head><body>
<h1>hvd-rendezvousd</h1>
<form id="login"><label>Admin token <input id="token" type="password"
autocomplete="off"></label> <button>Show the jobs</button></form>
<p id="error"></p>
<p id="store"></p>
<table id="jobs"><thead><tr><th>job</th><th>kind</th><th>ranks</th>
<th>epoch</th><th>members (rank host:slot generation state)</th><th>keys</th>
<th>bytes</th><th>expires in</th></tr></thead><tbody></tbody></table>
<script>
"use strict";
// The token from the form, or from a link's #token=... (never sent to the
// daemon in a URL, so never in a log), kept for this tab.
let token = sessionStorage.getItem("hvd-admin-token") || "";
if (location.hash.startsWith("#token=")) {
  token = decodeURIComponent(location.hash.slice(7));
  sessionStorage.setItem("hvd-admin-token", token);
  history.replaceState(null, "", location.pathname);
}
function cell(row, text, bad) {
  const td = row.insertCell();
  td.textContent = text;
  if (bad) td.className = "bad";
}
function member([rank, host, slot, generation, exit]) {
  return rank + " " + host + ":" + slot + " " +
         (generation ? "g" + generation : "not joined") + " " +
         (exit === null ? "running" : "exited " + exit);
}
async function refresh() {
  if (!token) return;
  try {
    const r = await fetch("/api/jobs",
                          {headers: {"Authorization": "Bearer " + token}});
    if (r.status === 403) {
      document.getElementById("error").textContent =
        "the admin token was refused";
      return;
    }
    const s = await r.json();
    document.getElementById("error").textContent = "";
    const store = document.getElementById("store");
    store.textContent = "Store: " + s.store.kind + ", " +
      (s.store.healthy ? "healthy" : "failing: " + s.store.last_error);
    store.className = s.store.healthy ? "" : "bad";
    const body = document.querySelector("#jobs tbody");
    body.replaceChildren();
    for (const j of s.jobs) {
      const row = body.insertRow();
      row.dataset.job = j.id;
      cell(row, j.id);
      cell(row, j.elastic ? "elastic" : "fixed");
      cell(row, String(j.size));
      cell(row, String(j.epoch));
      cell(row, j.members.map(member).join("; "),
           j.members.some(m => m[4] !== null && m[4] !== 0));
      cell(row, String(j.keys));
      cell(row, String(j.bytes));
      cell(row, j.expires_in_s === null ? "never" :
           j.expires_in_s.toFixed(0) + " s");
    }
  } catch (e) {
    document.getElementById("error").textContent =
      "the daemon does not answer (" + e + ")";
  }
}
document.getElementById("login").addEventListener("submit", ev => {
  ev.preventDefault();
  token = document.getElementById("token").value;
  sessionStorage.setItem("hvd-admin-token", token);
  refresh();
});
async function poll() {
  await refresh();
  setTimeout(poll, 2000);
}
poll();
</script>
</body></html>
)html";
}

}  // namespace hvd::rendezvous
