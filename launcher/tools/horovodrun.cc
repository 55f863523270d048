// horovodrun: reads its command line and environment, then hands the job
// to the runner the command line asks for (launcher/runners/).
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/files.h"
#include "launcher/cli.h"
#include "launcher/flight_analysis.h"
#include "launcher/job_watch.h"
#include "launcher/plan.h"
#include "launcher/runners/runner.h"

extern char** environ;

namespace hvd::launcher {
namespace {

// CLI errors: one line, exit 2, nothing started.
constexpr int kUsageError = 2;

int Fail(const Status& s, int code) {
  std::fprintf(stderr, "horovodrun: %s\n", s.message().c_str());
  return code;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// hvd's Python package as this horovodrun's build or installation lays it
// out: build/python beside build/launcher, or PREFIX/lib/python3/
// dist-packages beside PREFIX/bin; "" when neither holds it.
std::string PythonPackageDir(const std::string& here) {
  for (const char* rel : {"/../python", "/../lib/python3/dist-packages"}) {
    std::string dir = here + rel;
    if (::access((dir + "/hvd/__init__.py").c_str(), R_OK) == 0) {
      char real[PATH_MAX];
      return ::realpath(dir.c_str(), real) ? std::string(real) : dir;
    }
  }
  return "";
}

// The directory of this executable.
std::string SelfDirectory() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

// Where the helpers (hvd-ssh-exec, hvd-remote-exec) are: beside horovodrun
// in the build tree, PREFIX/libexec/hvd when installed (remote hosts have
// the same layout).
std::string HelperDirectory(const std::string& self) {
  if (::access((self + "/hvd-remote-exec").c_str(), X_OK) == 0) return self;
  return self + "/../libexec/hvd";
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::map<std::string, std::string> env = Environment();
  auto options = ParseCommandLine(args, env, ReadWholeFile);
  if (!options.ok()) return Fail(options.status(), kUsageError);
  if (options->show_help) {
    std::fputs(HelpText().c_str(), stdout);
    return 0;
  }
  if (options->show_version) {
    std::puts(VersionText().c_str());
    return 0;
  }
  if (options->check_build) {
    std::fputs(CheckBuildText().c_str(), stdout);
    return 0;
  }
  if (!options->analyze.empty()) {
    auto report = AnalyzeFlightDir(options->analyze);
    if (!report.ok()) return Fail(report.status(), kUsageError);
    for (const std::string& line : *report) std::puts(line.c_str());
    return 0;
  }
  for (const std::string& w : options->warnings) {
    std::fprintf(stderr, "horovodrun: warning: %s\n", w.c_str());
  }
  if (options->verbose) {
    for (const std::string& n : options->notes) {
      std::fprintf(stderr, "horovodrun: %s\n", n.c_str());
    }
  }
  const std::string self = SelfDirectory();
  // Workers that are Python scripts import horovod.torch from the package
  // that came with this horovodrun, with no PYTHONPATH to set by hand (a
  // package the user's PYTHONPATH names comes first).
  if (std::string py = PythonPackageDir(self); !py.empty()) {
    env["PYTHONPATH"] =
        AppendToPath(env.count("PYTHONPATH") ? env.at("PYTHONPATH") : "", py);
  }
  JobWatch::AskWorkers(*options, env);
  const RunnerContext context{*options, env, HelperDirectory(self)};
  std::unique_ptr<Runner> runner = ChooseRunner(context);
  return RunJob(*runner, context);
}

}  // namespace
}  // namespace hvd::launcher

int main(int argc, char** argv) { return hvd::launcher::Main(argc, argv); }
