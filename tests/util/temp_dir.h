// A private temporary folder for a test, removed with everything in it.
#pragma once

#include <string>

namespace hvd::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content,
                    int mode = 0600) const;

 private:
  std::string path_;
};

// Runs `cmd` with /bin/sh; true when it exits 0.
bool Shell(const std::string& cmd);

// Runs `cmd` in the shell; true when it exits 0. `output` gets what it
// wrote to stdout and stderr, for the message when it fails.
bool ShellCapture(const std::string& cmd, std::string* output);

}  // namespace hvd::testing
