#include "launcher/say.h"

#include <unistd.h>

#include <deque>
#include <mutex>

namespace hvd::launcher {
namespace {

struct Said {
  std::mutex mu;
  uint64_t count = 0;                                  // guarded by mu
  std::deque<std::pair<uint64_t, std::string>> lines;  // guarded by mu
};

Said& TheSaid() {
  static Said* said = new Said();  // never destroyed: threads may say late
  return *said;
}

}  // namespace

void Say(const std::string& line) {
  const std::string text = "horovodrun: " + line + "\n";
  (void)!::write(STDERR_FILENO, text.data(), text.size());
  Said& s = TheSaid();
  std::lock_guard<std::mutex> lock(s.mu);
  s.lines.emplace_back(++s.count, line);
  while (s.lines.size() > kLinesKept) s.lines.pop_front();
}

void SayLines(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    Say(text.substr(start, end - start));
    start = end + 1;
  }
}

std::vector<std::pair<uint64_t, std::string>> LinesSaidAfter(uint64_t after) {
  Said& s = TheSaid();
  std::lock_guard<std::mutex> lock(s.mu);
  std::vector<std::pair<uint64_t, std::string>> out;
  for (const auto& l : s.lines) {
    if (l.first > after) out.push_back(l);
  }
  return out;
}

}  // namespace hvd::launcher
