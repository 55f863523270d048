// The live page of a running job at / of --metrics-port: one HTML page,
// no build step and no CDN, that polls /api/state (live_state.h) once a
// second and draws the job, each host's health (values out of their
// healthy range in red) and its figures over the job's life, with
// Debian's Chart.js served at /chart.js (libjs-chart.js; without it the
// page shows the tables and says why there are no charts).
#pragma once

#include <string>

namespace hvd::launcher {

// The page's HTML.
const char* LivePageHtml();

// Where Debian's libjs-chart.js puts its UMD build.
inline constexpr const char* kChartJsPath =
    "/usr/share/javascript/chart.js/chart.min.js";

}  // namespace hvd::launcher
