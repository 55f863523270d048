// The timeline of an engine over real ranks: Chrome's trace format, valid
// at every flush, with every phase of a cycle.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/context.h"
#include "runtime/engine/engine.h"
#include "runtime/timeline.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

TEST(TimelineTest, ChromeTraceOfEveryPhaseValidAtEveryFlush) {
  char tmpl[] = "/tmp/hvd-timeline-XXXXXX";
  int fd = mkstemp(tmpl);
  close(fd);
  std::string path = tmpl;
  RunRanks(
      2, 1 << 20,
      [&](Context& ctx, int rank) {
        // Even layers are small enough to travel with the negotiation
        // (reduced locally); odd ones go through Gloo.
        std::vector<std::vector<float>> bufs;
        for (int i = 0; i < 6; ++i) bufs.emplace_back(i % 2 ? 8192 : 64, 1.0f);
        std::vector<std::shared_ptr<Completion>> done;
        for (int i = 0; i < 6; ++i) {
          Request r;
          r.name = "layer" + std::to_string(i) + "/\"grad\"";
          r.count = static_cast<int64_t>(bufs[i].size());
          done.push_back(ctx.engine().Enqueue(r, bufs[i].data()));
        }
        for (auto& d : done) ASSERT_TRUE(d->Wait().ok());
        if (rank == 0) {
          ASSERT_NE(ctx.timeline(), nullptr);
          ctx.timeline()->Flush();
          std::ifstream f(path);
          std::stringstream text;
          text << f.rdbuf();
          // Valid while the job still runs.
          EXPECT_NO_THROW({
            nlohmann::json mid = nlohmann::json::parse(text.str());
            EXPECT_TRUE(mid.is_array());
          }) << text.str();
        }
      },
      milliseconds(20000),
      [&](WorkerConfig& c) {
        c.timeline = path;
        c.timeline_mark_cycles = true;
      });
  std::ifstream f(path);
  nlohmann::json trace = nlohmann::json::parse(f);
  ASSERT_TRUE(trace.is_array());
  std::map<std::string, int> phases;
  std::set<std::string> processes;
  for (const auto& e : trace) {
    if (e["ph"] == "M") processes.insert(e["args"]["name"].get<std::string>());
    if (e.contains("name"))
      phases[e["name"].get<std::string>() + e["ph"].get<std::string>()]++;
  }
  EXPECT_TRUE(processes.count("layer0/\"grad\"")) << trace.dump();
  EXPECT_EQ(phases["NEGOTIATE_ALLREDUCEB"], 6);
  EXPECT_EQ(phases["ALLREDUCEB"], 6);
  EXPECT_EQ(phases["GLOO_ALLREDUCEB"], 3);
  EXPECT_EQ(phases["LOCAL_REDUCEB"], 3);
  EXPECT_GE(phases["0i"], 6);  // rank 0 ready marks
  EXPECT_GE(phases["1i"], 6);  // rank 1 ready marks
  EXPECT_GE(phases["CYCLE_STARTi"], 1);
  unlink(path.c_str());
}

}  // namespace
}  // namespace hvd::runtime
