#include "launcher/cli.h"

#include "common/host_port.h"
#include "common/parse.h"

namespace hvd::launcher {
namespace {

bool IsOption(const std::string& word) {
  return word.size() > 1 && word[0] == '-';
}

}  // namespace

StatusOr<LaunchOptions> ParseCommandLine(
    const std::vector<std::string>& args,
    const std::map<std::string, std::string>& env) {
  LaunchOptions o;
  if (auto it = env.find("HOROVOD_START_TIMEOUT"); it != env.end()) {
    HVD_ASSIGN_OR_RETURN(
        int64_t t, ParseInt64(it->second, "HOROVOD_START_TIMEOUT", 1, 86400));
    o.start_timeout_s = static_cast<int>(t);
  }
  bool np_given = false;
  size_t i = 0;
  for (; i < args.size(); ++i) {
    std::string word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (!IsOption(word)) break;
    std::optional<std::string> inline_value;
    if (word.rfind("--", 0) == 0) {
      size_t eq = word.find('=');
      if (eq != std::string::npos) {
        inline_value = word.substr(eq + 1);
        word = word.substr(0, eq);
      }
    }
    auto value = [&]() -> StatusOr<std::string> {
      if (inline_value) return *inline_value;
      if (i + 1 >= args.size()) {
        return Status::InvalidArgument(word, "needs a value");
      }
      return args[++i];
    };
    auto no_value = [&]() -> Status {
      if (inline_value) {
        return Status::InvalidArgument(word, "takes no value");
      }
      return Status::Ok();
    };
    if (word == "-np" || word == "--num-proc" || word == "-n") {
      HVD_ASSIGN_OR_RETURN(std::string v, value());
      HVD_ASSIGN_OR_RETURN(int64_t n, ParseInt64(v, word, 1, 1 << 20));
      o.num_proc = static_cast<int>(n);
      np_given = true;
    } else if (word == "-H" || word == "--hosts") {
      HVD_ASSIGN_OR_RETURN(std::string v, value());
      HVD_ASSIGN_OR_RETURN(o.hosts, ParseHostList(v));
      o.hosts_given = true;
    } else if (word == "--start-timeout") {
      HVD_ASSIGN_OR_RETURN(std::string v, value());
      HVD_ASSIGN_OR_RETURN(int64_t t, ParseInt64(v, word, 1, 86400));
      o.start_timeout_s = static_cast<int>(t);
    } else if (word == "--rendezvous-addr") {
      HVD_ASSIGN_OR_RETURN(o.rendezvous_addr, value());
      HVD_RETURN_IF_ERROR(ParseHostPort(o.rendezvous_addr, word).status());
    } else if (word == "--rendezvous-token-file") {
      HVD_ASSIGN_OR_RETURN(o.rendezvous_token_file, value());
    } else if (word == "--rendezvous-tls-ca") {
      HVD_ASSIGN_OR_RETURN(o.rendezvous_tls_ca, value());
    } else if (word == "--rendezvous-tls-cert") {
      HVD_ASSIGN_OR_RETURN(o.rendezvous_tls_cert, value());
    } else if (word == "--rendezvous-tls-key") {
      HVD_ASSIGN_OR_RETURN(o.rendezvous_tls_key, value());
    } else if (word == "--gloo") {
      HVD_RETURN_IF_ERROR(no_value());
    } else if (word == "--mpi") {
      return Status::InvalidArgument(
          "--mpi", "hvd runs on Gloo (the default); drop --mpi");
    } else if (word == "--verbose") {
      HVD_RETURN_IF_ERROR(no_value());
      o.verbose = true;
    } else if (word == "-h" || word == "--help") {
      o.show_help = true;
      return o;
    } else if (word == "-v" || word == "--version") {
      o.show_version = true;
      return o;
    } else {
      return Status::InvalidArgument(word,
                                     "unknown option (see horovodrun --help)");
    }
  }
  o.command.assign(args.begin() + i, args.end());
  if (!np_given) {
    return Status::InvalidArgument("-np",
                                   "is required: the number of processes");
  }
  if (o.command.empty()) {
    return Status::InvalidArgument(
        "command", "missing: give the program to run after the options");
  }
  if (!o.hosts_given) o.hosts = {{"localhost", o.num_proc}};
  if (o.rendezvous_addr.empty()) {
    for (const std::string* f :
         {&o.rendezvous_token_file, &o.rendezvous_tls_ca,
          &o.rendezvous_tls_cert, &o.rendezvous_tls_key}) {
      if (!f->empty()) {
        return Status::InvalidArgument("--rendezvous-*",
                                       "these options need --rendezvous-addr");
      }
    }
  } else if (o.rendezvous_token_file.empty()) {
    return Status::InvalidArgument(
        "--rendezvous-addr",
        "needs --rendezvous-token-file with the daemon's admin token");
  }
  if (o.rendezvous_tls_cert.empty() != o.rendezvous_tls_key.empty()) {
    return Status::InvalidArgument("--rendezvous-tls-cert/--rendezvous-tls-key",
                                   "give both or neither");
  }
  if (!o.rendezvous_tls_cert.empty() && o.rendezvous_tls_ca.empty()) {
    return Status::InvalidArgument("--rendezvous-tls-cert",
                                   "needs --rendezvous-tls-ca");
  }
  return o;
}

std::string HelpText() {
  return R"(usage: horovodrun -np N [options] command [args...]

Starts N copies of command, gives each its rank through an authenticated
rendezvous, and supervises them: output is prefixed with the rank, and the
first failure stops the whole job.

required:
  -np, --num-proc N        number of processes

hosts:
  -H, --hosts H1:S1,H2:S2  hosts and their slots (default localhost:N);
                           IPv6 as [ADDR]:S

controller:
  --gloo                   use Gloo for collectives (the default)

launch:
  --start-timeout S        seconds workers have to join the rendezvous
                           (default 30, or HOROVOD_START_TIMEOUT)

rendezvous (default: one embedded in horovodrun):
  --rendezvous-addr HOST:PORT    use a running hvd-rendezvousd
  --rendezvous-token-file F      file with the daemon's admin token
  --rendezvous-tls-ca F          CA that signed the daemon's certificate
  --rendezvous-tls-cert F        client certificate, for mutual TLS
  --rendezvous-tls-key F         its private key

logging:
  --verbose                say what the launcher does

other:
  -h, --help               show this help and exit
  -v, --version            show the version and exit
)";
}

std::string VersionText() { return "horovodrun (hvd) 0.1.0"; }

}  // namespace hvd::launcher
