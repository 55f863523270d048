#include "tests/util/browser.h"

#include <unistd.h>

#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

constexpr std::chrono::milliseconds kTimeout = std::chrono::seconds(120);

std::vector<std::string> Args(const std::string& profile,
                              std::chrono::milliseconds budget) {
  return {ChromiumPath(),
          "--headless=new",
          "--no-sandbox",
          "--disable-gpu",
          "--no-first-run",
          "--hide-scrollbars",
          "--user-data-dir=" + profile,
          "--enable-logging=stderr",
          "--v=0",
          "--virtual-time-budget=" + std::to_string(budget.count())};
}

}  // namespace

std::string ChromiumPath() {
  return ::access("/usr/bin/chromium", X_OK) == 0 ? "/usr/bin/chromium" : "";
}

Rendered RenderPage(const std::string& url, std::chrono::milliseconds budget) {
  TempDir profile;
  std::vector<std::string> argv = Args(profile.path(), budget);
  argv.push_back("--dump-dom");
  argv.push_back(url);
  Result r = RunCommand(argv, kTimeout);
  Rendered out;
  out.ok = r.exit_code == 0;
  out.dom = r.out;
  if (!out.ok) {
    out.errors =
        "chromium exited " + std::to_string(r.exit_code) + ": " + r.err + "\n";
  }
  // The page's console: an exception thrown, or a resource refused.
  for (const std::string& line : Lines(r.err)) {
    const bool console = line.find("CONSOLE") != std::string::npos;
    if ((console && line.find("Uncaught") != std::string::npos) ||
        (console && line.find("Failed to load") != std::string::npos)) {
      out.errors += line + "\n";
    }
  }
  return out;
}

std::string PageLacks(const std::string& url,
                      const std::vector<std::string>& parts,
                      const std::string& png) {
  Rendered page = RenderPage(url);
  std::string lacks = page.errors;
  for (const std::string& part : parts) {
    if (page.dom.find(part) == std::string::npos) lacks += "no " + part + "\n";
  }
  if (!png.empty() && !Screenshot(url, png))
    lacks += "no screenshot " + png + "\n";
  if (!lacks.empty() && page.ok) lacks += "in:\n" + page.dom;
  return lacks;
}

bool Screenshot(const std::string& url, const std::string& png, int width,
                int height, std::chrono::milliseconds budget) {
  TempDir profile;
  std::vector<std::string> argv = Args(profile.path(), budget);
  argv.push_back("--window-size=" + std::to_string(width) + "," +
                 std::to_string(height));
  argv.push_back("--screenshot=" + png);
  argv.push_back(url);
  return RunCommand(argv, kTimeout).exit_code == 0 &&
         ::access(png.c_str(), R_OK) == 0;
}

}  // namespace hvd::testing
