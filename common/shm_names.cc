#include "common/shm_names.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

namespace hvd {
namespace {

constexpr const char* kShmDir = "/dev/shm/";
// Names in /dev/shm that start with `prefix`.
std::vector<std::string> EntriesWithPrefix(const std::string& prefix) {
  std::vector<std::string> names;
  DIR* d = opendir(kShmDir);
  if (!d) return names;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0) {
      names.emplace_back(e->d_name);
    }
  }
  closedir(d);
  return names;
}

// The process group of `pid`, and whether it is a zombie (which holds no
// files or mappings any more). False when /proc/PID/stat cannot be read.
bool ReadStat(const std::string& pid, pid_t* pgid, bool* zombie) {
  std::ifstream f("/proc/" + pid + "/stat");
  std::string stat;
  if (!std::getline(f, stat)) return false;
  // "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
  size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = 0;
  long ppid = 0, pgrp = 0;
  if (std::sscanf(stat.c_str() + close + 2, "%c %ld %ld", &state, &ppid,
                  &pgrp) != 3) {
    return false;
  }
  *zombie = state == 'Z' || state == 'X';
  *pgid = static_cast<pid_t>(pgrp);
  return true;
}

// Adds to `used` each of `names` that `text` mentions as /dev/shm/NAME.
void MarkMentioned(const std::string& text,
                   const std::vector<std::string>& names,
                   std::set<std::string>& used) {
  for (const std::string& n : names) {
    const std::string path = kShmDir + n;
    size_t at = text.find(path);
    while (at != std::string::npos) {
      const size_t end = at + path.size();
      // The whole name: followed by the end, a space (" (deleted)") or a
      // new line, not by more characters of a longer name.
      if (end == text.size() || text[end] == ' ' || text[end] == '\n') {
        used.insert(n);
        break;
      }
      at = text.find(path, end);
    }
  }
}

// Names among `names` that a live process outside `dying_groups` has open
// or mapped.
std::set<std::string> NamesInUse(const std::vector<std::string>& names,
                                 const std::vector<pid_t>& dying_groups) {
  std::set<std::string> used;
  DIR* proc = opendir("/proc");
  if (!proc) return used;
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    const std::string pid = e->d_name;
    pid_t pgid = 0;
    bool zombie = false;
    if (!ReadStat(pid, &pgid, &zombie) || zombie) continue;
    if (std::find(dying_groups.begin(), dying_groups.end(), pgid) !=
        dying_groups.end()) {
      continue;
    }
    std::ifstream maps("/proc/" + pid + "/maps");
    std::string text((std::istreambuf_iterator<char>(maps)),
                     std::istreambuf_iterator<char>());
    const std::string fd_dir = "/proc/" + pid + "/fd";
    if (DIR* fds = opendir(fd_dir.c_str())) {
      while (dirent* f = readdir(fds)) {
        if (f->d_name[0] == '.') continue;
        char target[512];
        ssize_t n = readlink((fd_dir + "/" + f->d_name).c_str(), target,
                             sizeof(target) - 1);
        if (n <= 0) continue;
        text.append(target, static_cast<size_t>(n));
        text.push_back('\n');
      }
      closedir(fds);
    }
    MarkMentioned(text, names, used);
  }
  closedir(proc);
  return used;
}

// True while a process of `groups` runs (zombies, done with every call,
// not counting).
bool AnyRunsIn(const std::vector<pid_t>& groups) {
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  bool found = false;
  while (dirent* e = readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;
    pid_t pgid = 0;
    bool zombie = false;
    if (ReadStat(e->d_name, &pgid, &zombie) && !zombie &&
        std::find(groups.begin(), groups.end(), pgid) != groups.end()) {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
}

}  // namespace

std::string ShmJobPrefix(const std::string& job_id) {
  return "hvd-" + job_id.substr(0, 16) + "-";
}

ShmSweep SweepJobSegments(const std::string& job_id,
                          const std::vector<pid_t>& dying_groups,
                          std::chrono::milliseconds dying_wait) {
  ShmSweep sweep;
  // An empty or path-like id would match other jobs' names.
  if (job_id.empty() || job_id.find('/') != std::string::npos) return sweep;
  // A SIGKILL lands when its process next leaves the kernel: a worker on
  // another CPU may still finish creating a segment after kill() returned.
  // The names are listed once the killed are gone (a chaos run found one
  // created after the list was taken).
  const auto limit = std::chrono::steady_clock::now() + dying_wait;
  while (!dying_groups.empty() && AnyRunsIn(dying_groups) &&
         std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::vector<std::string> names = EntriesWithPrefix(ShmJobPrefix(job_id));
  if (names.empty()) return sweep;
  const std::set<std::string> used = NamesInUse(names, dying_groups);
  for (const std::string& n : names) {
    if (used.count(n)) {
      sweep.in_use.push_back(n);
    } else if (unlink((kShmDir + n).c_str()) == 0) {
      sweep.removed.push_back(n);
    }
  }
  return sweep;
}

}  // namespace hvd
