#include "launcher/runners/srun.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "launcher/elastic/discovery.h"
#include "launcher/local_host.h"
#include "launcher/runners/srun_step.h"

namespace hvd::launcher {
namespace {

// A file in TMPDIR (else /tmp) holding `text`; its path.
StatusOr<std::string> WriteTempFile(const std::string& text) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/hvd-XXXXXX";
  int fd = mkstemp(path.data());
  if (fd < 0) return Status::PermissionDenied(path, std::strerror(errno));
  const bool ok =
      write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!ok) {
    unlink(path.c_str());
    return Status::Internal(path, "cannot be written");
  }
  return path;
}

}  // namespace

bool SrunOutputFormat::SplitLabel(std::string_view line, int* task,
                                  size_t* text_at) const {
  return SplitSrunLabel(line, task, text_at);
}

bool SrunOutputFormat::ExitMarker(std::string_view text, int* code) const {
  return ParseSrunExitMarker(text, code);
}

bool SrunOutputFormat::TaskReport(std::string_view line, std::string* said,
                                  std::optional<int>* /*task*/) const {
  std::string node, what;
  if (!ParseSrunTaskError(std::string(line), &node, &what)) return false;
  *said = "srun: " + node + ": " + what;
  return true;
}

SrunRunner::~SrunRunner() {
  if (!hostfile_.empty()) unlink(hostfile_.c_str());
}

StatusOr<std::string> SrunRunner::FindStarter() {
  auto srun = FindProgram(context_, "srun");
  if (srun.ok()) return srun;
  return Status::NotFound("--launcher srun",
                          "srun is not on PATH (install Slurm's client, or "
                          "use --launcher ssh)");
}

// As slurmctld knows the node (NodeAddr), else as its name resolves.
std::string SrunRunner::HostAddress(const std::string& node) {
  if (node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTU"
                             "VWXYZ0123456789-_.") == std::string::npos) {
    auto out = elastic::RunScript("scontrol show node -o '" + node + "'",
                                  std::chrono::seconds(10));
    if (out.ok()) {
      std::smatch m;
      if (std::regex_search(*out, m, std::regex(R"(NodeAddr=(\S+))"))) {
        std::string addr = m[1];
        if (auto ip = ResolveAddress(addr); ip.ok()) return *ip;
      }
    }
  }
  auto ip = ResolveAddress(node);
  return ip.ok() ? *ip : "";
}

StatusOr<std::vector<std::string>> SrunRunner::StarterArgv(
    const std::vector<HostSpec>& hosts, std::vector<std::string>& step_env) {
  // srun places task i on the plan's host of rank i.
  HVD_ASSIGN_OR_RETURN(hostfile_, WriteTempFile(SrunHostfile(hosts)));
  step_env.push_back("SLURM_HOSTFILE=" + hostfile_);
  return SrunArgv(starter_, hosts, RemoteExecPath(context_), plan_.command);
}

std::shared_ptr<const TaskOutputFormat> SrunRunner::Format() const {
  return std::make_shared<SrunOutputFormat>();
}

}  // namespace hvd::launcher
