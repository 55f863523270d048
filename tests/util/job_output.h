// Checks of what a job printed, shared by the suites that run horovodrun:
// hvd_hello's lines, train_mnist's test accuracy, how often a line came.
#pragma once

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "tests/util/subprocess.h"

namespace hvd::testing {

// Every line of `out` is hvd_hello's "[R]<stdout>:rank R/np: sum=...",
// with the prefix's rank its own, and every rank of `np` is there.
// `others_allowed`: other lines may be mixed in (an sbatch output file).
inline void ExpectHello(const std::string& out, int np,
                        bool others_allowed = false) {
  std::set<int> ranks;
  const std::regex line(R"(\[(\d+)\]<stdout>:rank (\d+)/(\d+): sum=(\d+))");
  for (const std::string& l : Lines(out)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) {
      ASSERT_TRUE(others_allowed) << l;
      continue;
    }
    EXPECT_EQ(m[1], m[2]) << "prefix and rank differ: " << l;
    EXPECT_EQ(std::stoi(m[3]), np);
    EXPECT_EQ(std::stoi(m[4]), np * (np + 1) / 2);
    ranks.insert(std::stoi(m[1]));
  }
  EXPECT_EQ(ranks.size(), static_cast<size_t>(np)) << out;
}

// How often `what` occurs in `text` (overlapping occurrences count).
inline size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1)) {
    ++n;
  }
  return n;
}

// train_mnist's "Test accuracy: X" in `out`; -1 when it printed none.
inline double TestAccuracy(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"(Test accuracy: ([0-9.]+))"))) {
    return -1;
  }
  return std::stod(m[1]);
}

}  // namespace hvd::testing
