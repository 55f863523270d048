// ParseCommandLine with files handed in as a map, for the CLI's tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "launcher/cli.h"

namespace hvd::launcher {

inline StatusOr<LaunchOptions> Parse(
    std::vector<std::string> args, std::map<std::string, std::string> env = {},
    std::map<std::string, std::string> files = {}) {
  return ParseCommandLine(
      args, env, [&](const std::string& path) -> StatusOr<std::string> {
        auto it = files.find(path);
        if (it == files.end()) {
          return Status::NotFound("'" + path + "'", "cannot be read");
        }
        return it->second;
      });
}

}  // namespace hvd::launcher
