// The transport decision as tables, and the backend set the engine asks
// for backends, over fake backends.
#include "runtime/transport/topology.h"

#include <gtest/gtest.h>

#include "runtime/backend_set.h"
#include "runtime/transport/hierarchical/hierarchical_backend.h"

namespace hvd::runtime {
namespace {

TEST(TopologyTest, PlanTransportsFromWhereTheRanksAre) {
  struct Case {
    std::string what;
    TopologyFacts facts;
    TransportPlan plan;
  };
  auto facts = [](int size, int local, bool shm = true, bool shm_given = false,
                  bool autotune = false, std::optional<bool> har = {},
                  std::optional<bool> hag = {}) {
    TopologyFacts f;
    f.size = size;
    f.local_size = local;
    f.shm = shm;
    f.shm_given = shm_given;
    f.autotune = autotune;
    f.hierarchical_allreduce = har;
    f.hierarchical_allgather = hag;
    return f;
  };
  const Transport L = Transport::kLocal, S = Transport::kShm,
                  T = Transport::kTcp;
  const std::vector<Case> cases = {
      {"one rank", facts(1, 1), {L, L, false, false, false, false}},
      {"one host", facts(4, 4), {S, S, false, false, false, false}},
      {"one host, autotune may try TCP",
       facts(2, 2, true, false, true),
       {S, S, true, false, false, false}},
      {"shared memory pinned",
       facts(2, 2, true, true, true),
       {S, S, false, false, false, false}},
      {"shared memory off",
       facts(2, 2, false, true),
       {T, T, false, false, false, false}},
      {"hosts: hierarchical by default",
       facts(4, 2),
       {T, T, false, true, true, false}},
      {"hosts without shared memory",
       facts(4, 2, false, true),
       {T, T, false, false, false, false}},
      {"hosts, asked for",
       facts(4, 2, true, false, false, true, std::nullopt),
       {T, T, false, true, true, true}},
      {"hosts, allreduce pinned off",
       facts(4, 2, true, false, false, false, std::nullopt),
       {T, T, false, false, true, false}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(PlanTransports(c.facts), c.plan);
  }
}

TEST(TopologyTest, HierarchicalOnlyWhereEveryHostHoldsTheSameRanks) {
  TransportPlan both;
  both.data = both.control = Transport::kTcp;
  both.want_hierarchical_allreduce = both.want_hierarchical_allgather = true;
  TransportPlan reduce_only = both;
  reduce_only.want_hierarchical_allgather = false;
  struct Case {
    std::string what;
    TransportPlan plan;
    std::vector<int32_t> sizes;
    HierarchyDecision decision;
  };
  const std::vector<Case> cases = {
      {"even", both, {2, 2, 2, 2}, {true, true, ""}},
      {"allreduce only", reduce_only, {2, 2}, {true, false, ""}},
      {"uneven",
       both,
       {1, 2, 2},
       {false, false, "hosts hold different numbers of ranks"}},
      {"one rank per host",
       both,
       {1, 1},
       {false, false, "every host holds one rank"}},
      {"not wanted", TransportPlan{}, {2, 2}, {false, false, ""}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    EXPECT_EQ(DecideHierarchy(c.plan, c.sizes), c.decision);
  }
}

// A backend that only says which it is.
class Stub : public Backend {
 public:
  explicit Stub(int id) : id_(id) {}
  int id() const { return id_; }
  Status Allreduce(void*, size_t, DataType, ReduceOp) override {
    return Status::Ok();
  }
  Status Allgatherv(const void*, void*, const std::vector<size_t>&) override {
    return Status::Ok();
  }
  Status Broadcast(void*, size_t, int) override { return Status::Ok(); }
  Status Alltoallv(const void*, const std::vector<size_t>&, void*,
                   const std::vector<size_t>&) override {
    return Status::Ok();
  }
  Status Reducescatter(const void*, void*, const std::vector<size_t>&, DataType,
                       ReduceOp) override {
    return Status::Ok();
  }
  Status Barrier() override { return Status::Ok(); }

 private:
  int id_;
};

// One with the hierarchical and TCP knobs: it says which backend heard
// the choice.
class Named final : public Stub, public HierarchicalKnob, public TcpKnob {
 public:
  explicit Named(int id, int* hier = nullptr, int* streams = nullptr,
                 int* wide = nullptr)
      : Stub(id), hier_(hier), streams_(streams), wide_(wide) {}
  void SetHierarchical(bool allreduce, bool) override {
    if (hier_) *hier_ = allreduce ? id() : -id();
  }
  void SetSeveralStreams(bool on) override {
    if (streams_) *streams_ = on ? id() : -id();
  }
  void SetWideCrossovers(bool on) override {
    if (wide_) *wide_ = on ? id() : -id();
  }

 private:
  int* hier_;
  int* streams_;
  int* wide_;
};

// One with the single-copy knob only.
class SingleCopyStub final : public Stub, public SingleCopyKnob {
 public:
  SingleCopyStub(int id, bool* on) : Stub(id), on_(on) {}
  void SetSingleCopy(bool on) override { *on_ = on; }

 private:
  bool* on_;
};

int Id(Backend& b) { return dynamic_cast<Stub&>(b).id(); }

// A hierarchical allreduce is pipelined from two pieces' worth, in at most
// kMaxPieces pieces that cover the buffer in order, uneven where it is.
TEST(TopologyTest, PipelinePiecesCoverTheBufferInOrder) {
  const size_t mib = size_t{1} << 20;
  EXPECT_EQ(PipelinePieces(0, 4, mib), (std::vector<size_t>{0, 0}));
  EXPECT_EQ(PipelinePieces(mib / 4, 4, mib),
            (std::vector<size_t>{0, mib / 4}));  // one piece's worth
  EXPECT_EQ(PipelinePieces(mib / 2, 4, mib),
            (std::vector<size_t>{0, mib / 4, mib / 2}));
  EXPECT_EQ(PipelinePieces(7, 1, 3), (std::vector<size_t>{0, 3, 7}));
  EXPECT_EQ(PipelinePieces(100 * mib, 4, mib).size(), kMaxPieces + 1);
  EXPECT_EQ(PipelinePieces(100 * mib, 4, 0),
            (std::vector<size_t>{0, 100 * mib}));
  const std::vector<size_t> at = PipelinePieces(2500007, 4, 2 * mib);
  ASSERT_EQ(at.size(), 5u);
  EXPECT_EQ(at.front(), 0u);
  EXPECT_EQ(at.back(), 2500007u);
  for (size_t i = 1; i < at.size(); ++i) {
    EXPECT_GE(at[i] - at[i - 1], 625001u);
    EXPECT_LE(at[i] - at[i - 1], 625002u);
  }
}

TEST(BackendSetTest, HostSwitchesAndDeviceBackendsAreMadeOnce) {
  int made_alternative = 0, made_device = 0, hier = 0;
  BackendSet set(
      std::make_unique<Named>(1, &hier), "shared memory",
      [&]() -> StatusOr<std::unique_ptr<Backend>> {
        ++made_alternative;
        return std::unique_ptr<Backend>(std::make_unique<Named>(2, &hier));
      },
      "Gloo over TCP",
      [&](int device) -> StatusOr<std::unique_ptr<Backend>> {
        ++made_device;
        return std::unique_ptr<Backend>(std::make_unique<Named>(10 + device));
      },
      2);
  EXPECT_EQ(Id(set.host()), 1);
  EXPECT_TRUE(set.can_switch_host());
  ASSERT_TRUE(set.UsePrimaryHost(false).ok());
  EXPECT_EQ(Id(set.host()), 2);
  ASSERT_TRUE(set.UsePrimaryHost(true).ok());
  ASSERT_TRUE(set.UsePrimaryHost(false).ok());
  EXPECT_EQ(made_alternative, 1);
  set.SetHierarchical(true, false);
  EXPECT_EQ(hier, 2);  // the path in use
  EXPECT_TRUE(set.has_device());
  EXPECT_EQ(set.cuda_devices(), 2);
  auto dev = set.Device(1, 0);
  ASSERT_TRUE(dev.ok());
  EXPECT_EQ(Id(**dev), 11);
  EXPECT_EQ(Id(**set.Device(1, 0)), 11);
  EXPECT_EQ(made_device, 1);
  auto other = set.Device(0, 3);
  EXPECT_EQ(other.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().ToString().find("rank 3"), std::string::npos);
}

TEST(BackendSetTest, WithoutAlternativesNothingSwitches) {
  BackendSet set(std::make_unique<Named>(1), "TCP");
  EXPECT_FALSE(set.can_switch_host());
  EXPECT_TRUE(set.UsePrimaryHost(false).ok());
  EXPECT_EQ(Id(set.host()), 1);
  EXPECT_FALSE(set.has_device());
  EXPECT_EQ(set.cuda_devices(), 0);
  EXPECT_FALSE(set.Device(0, 0).ok());
}

// Autotune's transport knobs reach the host backend in use, and only
// where it has the knob.
TEST(BackendSetTest, KnobsReachOnlyTheBackendsThatHaveThem) {
  bool single_copy = true;
  int hier = 0, streams = 0, wide = 0;
  BackendSet set(
      std::make_unique<SingleCopyStub>(1, &single_copy), "shared memory",
      [&]() -> StatusOr<std::unique_ptr<Backend>> {
        return std::unique_ptr<Backend>(
            std::make_unique<Named>(2, &hier, &streams, &wide));
      },
      "Gloo over TCP");
  set.SetSingleCopy(false);
  EXPECT_FALSE(single_copy);
  set.SetHierarchical(true, true);  // shared memory has no such knobs
  set.SetSeveralStreams(false);
  set.SetWideCrossovers(true);
  EXPECT_EQ(hier, 0);
  EXPECT_EQ(streams, 0);
  EXPECT_EQ(wide, 0);
  ASSERT_TRUE(set.UsePrimaryHost(false).ok());
  set.SetHierarchical(true, false);
  EXPECT_EQ(hier, 2);
  set.SetSeveralStreams(false);
  EXPECT_EQ(streams, -2);
  set.SetWideCrossovers(true);
  EXPECT_EQ(wide, 2);
  set.SetSingleCopy(true);  // TCP has none: shared memory's stays off
  EXPECT_FALSE(single_copy);
}

}  // namespace
}  // namespace hvd::runtime
