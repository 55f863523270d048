#include "launcher/hosts.h"

#include <cctype>
#include <cstdio>
#include <unordered_set>

#include "common/parse.h"

namespace hvd::launcher {
namespace {

std::string_view Trim(std::string_view s) {
  size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string_view::npos) return {};
  size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

// Host and user names as DNS, /etc/hosts and useradd take them; brackets
// hold an IPv6 address (hex, ':', '.', a '%' zone). Anything else, a
// space, a comma or a shell character, is a mistake: names travel into
// SSH, srun host files and --launcher-cmd's command line.
Status CheckName(std::string_view name, bool bracketed, const std::string& src,
                 const char* what) {
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                    c == '-' || c == '_' ||
                    (bracketed && (c == ':' || c == '%'));
    if (!ok) {
      char shown[8];
      std::snprintf(
          shown, sizeof(shown),
          std::isprint(static_cast<unsigned char>(c)) ? "%c" : "\\x%02x",
          static_cast<unsigned char>(c));
      return Status::InvalidArgument(
          src, std::string(what) + " '" + std::string(name) + "' has '" +
                   std::string(shown) +
                   "': use letters, digits, '.', '-' and '_'" +
                   (bracketed ? " (and ':' or '%' in [IPv6])" : ""));
    }
  }
  return Status::Ok();
}

// One "[user@]host[:slots]" entry; `what` names the source in errors, and
// `given_slots` (when not null) says whether ":slots" was written.
StatusOr<HostSpec> ParseEntry(std::string_view entry,
                              std::string_view what = "-H",
                              bool* given_slots = nullptr) {
  const std::string src(what);
  HostSpec spec;
  if (size_t at = entry.find('@'); at != std::string_view::npos) {
    spec.user = std::string(entry.substr(0, at));
    entry = entry.substr(at + 1);
    if (spec.user.empty()) {
      return Status::InvalidArgument(src, "empty user name before '@'");
    }
  }
  std::string_view slots_text;
  bool has_slots = false;
  if (!entry.empty() && entry.front() == '[') {
    size_t close = entry.find(']');
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(
          src, "'" + std::string(entry) + "' has '[' without ']'");
    }
    spec.host = std::string(entry.substr(1, close - 1));
    // Brackets are for IPv6 addresses alone (FormatHostList writes them
    // only there).
    if (spec.host.find(':') == std::string::npos) {
      return Status::InvalidArgument(
          src, "'" + std::string(entry) +
                   "' has brackets but no IPv6 address inside; write a host "
                   "name without them");
    }
    std::string_view rest = entry.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return Status::InvalidArgument(
            src, "expected ':SLOTS' after ']' in '" + std::string(entry) + "'");
      }
      slots_text = rest.substr(1);
      has_slots = true;
    }
  } else {
    size_t colon = entry.rfind(':');
    if (colon != std::string_view::npos && entry.find(':') != colon) {
      return Status::InvalidArgument(
          src, "'" + std::string(entry) +
                   "' looks like an IPv6 address; write it as [ADDR]:SLOTS");
    }
    spec.host = std::string(entry.substr(0, colon));
    if (colon != std::string_view::npos) {
      slots_text = entry.substr(colon + 1);
      has_slots = true;
    }
  }
  if (spec.host.empty()) {
    return Status::InvalidArgument(
        src, "empty host name in '" + std::string(entry) + "'");
  }
  HVD_RETURN_IF_ERROR(CheckName(spec.user, false, src, "user name"));
  HVD_RETURN_IF_ERROR(CheckName(
      spec.host, !entry.empty() && entry.front() == '[', src, "host"));
  if (has_slots) {
    HVD_ASSIGN_OR_RETURN(
        int64_t slots,
        ParseInt64(slots_text, src + " slots of '" + spec.host + "'", 0,
                   1 << 20));
    spec.slots = static_cast<int>(slots);
  }
  if (given_slots) *given_slots = has_slots;
  return spec;
}

}  // namespace

StatusOr<std::vector<HostSpec>> ParseHostList(std::string_view text) {
  std::vector<HostSpec> out;
  std::unordered_set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    // Spaces around an entry are Horovod's too ("a:2, b:2").
    std::string_view entry = Trim(text.substr(start, comma - start));
    if (entry.empty()) {
      return Status::InvalidArgument(
          "-H", "empty entry in '" + std::string(text) + "' (stray comma?)");
    }
    HVD_ASSIGN_OR_RETURN(HostSpec spec, ParseEntry(entry));
    if (!seen.insert(spec.host).second) {
      return Status::InvalidArgument(
          "-H", "host '" + spec.host +
                    "' is listed twice; list it once with all its slots");
    }
    // host:0 is a host with no slots, as in Horovod: nothing runs there.
    if (spec.slots > 0) out.push_back(std::move(spec));
    start = comma + 1;
  }
  return out;
}

StatusOr<std::vector<HostSpec>> ParseDiscoveredHosts(std::string_view text,
                                                     int default_slots) {
  const std::string what = "host discovery script";
  std::vector<HostSpec> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t eol = text.find('\n', start);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = Trim(text.substr(start, eol - start));
    start = eol + 1;
    if (line.empty()) continue;
    bool given = false;
    HVD_ASSIGN_OR_RETURN(HostSpec spec, ParseEntry(line, what, &given));
    if (!given) {
      if (default_slots <= 0) {
        return Status::InvalidArgument(
            what, "printed '" + std::string(line) +
                      "' without slots; print HOST:SLOTS or pass "
                      "--slots-per-host");
      }
      spec.slots = default_slots;
    }
    bool repeated = false;
    for (const HostSpec& h : out) {
      if (h.host != spec.host) continue;
      if (h.slots != spec.slots) {
        return Status::InvalidArgument(
            what, "printed host '" + spec.host + "' with " +
                      std::to_string(h.slots) + " and with " +
                      std::to_string(spec.slots) + " slots");
      }
      repeated = true;
    }
    if (!repeated) out.push_back(std::move(spec));
  }
  return out;
}

namespace {

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

// Splits at commas that are not inside brackets: "a[1,2],b" -> a[1,2] | b.
std::vector<std::string_view> SplitTopLevel(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    } else if (s[i] == '[') {
      ++depth;
    } else if (s[i] == ']') {
      --depth;
    }
  }
  return out;
}

}  // namespace

StatusOr<std::vector<HostSpec>> ParseHostFile(std::string_view text,
                                              const std::string& path) {
  std::vector<HostSpec> hosts;
  std::unordered_set<std::string> seen;
  int line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (size_t hash = line.find('#'); hash != std::string_view::npos) {
      line = line.substr(0, hash);
    }
    line = Trim(line);
    if (line.empty()) continue;
    std::string where = path + ":" + std::to_string(line_no);
    std::vector<std::string_view> words = Words(line);
    HVD_ASSIGN_OR_RETURN(HostSpec spec, ParseEntry(words[0]));
    if (words[0].find(':') != std::string_view::npos &&
        words[0].front() != '[') {
      return Status::InvalidArgument(
          where, "write 'host slots=N', not '" + std::string(words[0]) + "'");
    }
    for (size_t w = 1; w < words.size(); ++w) {
      std::string_view word = words[w];
      if (word.rfind("slots=", 0) == 0) {
        HVD_ASSIGN_OR_RETURN(
            int64_t n,
            ParseInt64(word.substr(6), where + " slots", 1, 1 << 20));
        spec.slots = static_cast<int>(n);
      } else if (word.rfind("max_slots=", 0) == 0 ||
                 word.rfind("max-slots=", 0) == 0) {
        HVD_RETURN_IF_ERROR(
            ParseInt64(word.substr(10), where + " max_slots", 1, 1 << 20)
                .status());
      } else {
        return Status::InvalidArgument(
            where, "unknown field '" + std::string(word) +
                       "' (expected slots=N or max_slots=N)");
      }
    }
    if (!seen.insert(spec.host).second) {
      return Status::InvalidArgument(
          where, "host '" + spec.host + "' is listed twice");
    }
    hosts.push_back(std::move(spec));
  }
  if (hosts.empty()) {
    return Status::InvalidArgument(path, "lists no hosts");
  }
  return hosts;
}

StatusOr<std::vector<HostSpec>> ParseSlurmHosts(std::string_view nodelist,
                                                std::string_view tasks) {
  const std::string kList = "SLURM_JOB_NODELIST";
  std::vector<std::string> names;
  for (std::string_view item : SplitTopLevel(nodelist)) {
    if (item.empty()) {
      return Status::InvalidArgument(kList, "has an empty entry");
    }
    size_t open = item.find('[');
    if (open == std::string_view::npos) {
      names.emplace_back(item);
      continue;
    }
    size_t close = item.find(']', open);
    if (close == std::string_view::npos) {
      return Status::InvalidArgument(
          kList, "'" + std::string(item) + "' has '[' without ']'");
    }
    std::string prefix(item.substr(0, open));
    std::string suffix(item.substr(close + 1));
    std::string_view ranges = item.substr(open + 1, close - open - 1);
    size_t r = 0;
    while (r <= ranges.size()) {
      size_t comma = ranges.find(',', r);
      if (comma == std::string_view::npos) comma = ranges.size();
      std::string_view range = ranges.substr(r, comma - r);
      r = comma + 1;
      size_t dash = range.find('-');
      std::string_view lo = range.substr(0, dash);
      std::string_view hi =
          dash == std::string_view::npos ? lo : range.substr(dash + 1);
      HVD_ASSIGN_OR_RETURN(int64_t a, ParseInt64(lo, kList, 0, 1LL << 40));
      HVD_ASSIGN_OR_RETURN(int64_t b, ParseInt64(hi, kList, 0, 1LL << 40));
      if (b < a || b - a > 100000) {
        return Status::InvalidArgument(
            kList, "bad range '" + std::string(range) + "'");
      }
      // Zero padding follows the width of the low end, as Slurm writes it.
      for (int64_t n = a; n <= b; ++n) {
        std::string num = std::to_string(n);
        if (num.size() < lo.size()) num.insert(0, lo.size() - num.size(), '0');
        names.push_back(prefix + num + suffix);
      }
    }
  }
  std::vector<int> counts;
  for (std::string_view item : SplitTopLevel(tasks)) {
    int repeat = 1;
    std::string_view count = item;
    if (size_t paren = item.find("(x"); paren != std::string_view::npos) {
      if (item.back() != ')') {
        return Status::InvalidArgument("SLURM_TASKS_PER_NODE",
                                       "bad entry '" + std::string(item) + "'");
      }
      HVD_ASSIGN_OR_RETURN(
          int64_t rep,
          ParseInt64(item.substr(paren + 2, item.size() - paren - 3),
                     "SLURM_TASKS_PER_NODE", 1, 1 << 20));
      repeat = static_cast<int>(rep);
      count = item.substr(0, paren);
    }
    HVD_ASSIGN_OR_RETURN(int64_t c,
                         ParseInt64(count, "SLURM_TASKS_PER_NODE", 1, 1 << 20));
    for (int i = 0; i < repeat; ++i) counts.push_back(static_cast<int>(c));
  }
  if (counts.size() != names.size()) {
    return Status::InvalidArgument(
        "SLURM_TASKS_PER_NODE",
        "gives " + std::to_string(counts.size()) + " task counts for " +
            std::to_string(names.size()) + " nodes of SLURM_JOB_NODELIST");
  }
  std::vector<HostSpec> hosts;
  for (size_t i = 0; i < names.size(); ++i) {
    hosts.push_back({names[i], counts[i], ""});
  }
  return hosts;
}

std::string FormatHostList(const std::vector<HostSpec>& hosts) {
  std::string out;
  for (const HostSpec& h : hosts) {
    if (!out.empty()) out += ",";
    if (!h.user.empty()) out += h.user + "@";
    if (h.host.find(':') != std::string::npos) {
      out += "[" + h.host + "]";
    } else {
      out += h.host;
    }
    out += ":" + std::to_string(h.slots);
  }
  return out;
}

}  // namespace hvd::launcher
