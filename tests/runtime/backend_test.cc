// Every collective of the backends, element by element: every type and op,
// sizes 0, 1, odd and larger, world sizes 1 to 4 (ranks as threads, each
// with its own context, over a real rendezvous and real Gloo TCP).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <numeric>
#include <string>
#include <thread>
#include <tuple>

#include "rendezvous/server.h"
#include "runtime/context.h"
#include "runtime/transport/shm/shm_backend.h"
#include "runtime/transport/shm/shm_heap.h"
#include "tests/runtime/ranks.h"

namespace hvd::runtime {
namespace {

using std::chrono::milliseconds;

double Value(int rank, size_t i) { return 1 + (i + rank) % 3; }

// Which backend the ranks get: TCP (hvd's ring for allreduce, Gloo for the
// rest; the test's sizes take recursive doubling), TCP with every size on
// the ring proper, cutting every step over three streams, the same with
// every size on recursive doubling, and on recursive halving, Gloo
// alone (HOROVOD_TCP_RING_DISABLE), shared memory (the default for ranks of
// one host), shared memory with slots so small that every collective runs
// in many chunks (and always through the segment: two copies), or shared
// memory reading the peers' buffers directly (single copy) at every size.
const char* g_backend = "shm";

void RunRanksOn(int size, const std::function<void(Context&, int)>& body) {
  RunRanks(size, body, [](WorkerConfig& c) {
    const std::string b = g_backend;
    c.shm = b.rfind("gloo", 0) != 0;
    if (b == "gloo-streams") {
      c.tcp_streams = 3;
      c.tcp_stream_bytes = 4096;
      c.tcp_doubling_bytes = 0;
      c.tcp_halving_bytes = 0;
    }
    if (b == "gloo-halving") {
      c.tcp_streams = 3;
      c.tcp_stream_bytes = 4096;
      c.tcp_doubling_bytes = 0;
      c.tcp_halving_bytes = size_t{1} << 40;
    }
    if (b == "gloo-doubling") {
      c.tcp_streams = 3;
      c.tcp_stream_bytes = 4096;
      c.tcp_doubling_bytes = size_t{1} << 40;
    }
    if (b == "gloo-only") c.tcp_ring = false;
    if (std::string(g_backend) == "shm-small") {
      c.shm_slot_bytes = 4096;
      c.shm_single_copy_bytes = 0;
    }
    if (std::string(g_backend) == "shm-direct") c.shm_single_copy_bytes = 1;
  });
}

class BackendMatrixTest
    : public ::testing::TestWithParam<std::tuple<int, const char*>> {
 protected:
  void SetUp() override { g_backend = std::get<1>(GetParam()); }
};

TEST_P(BackendMatrixTest, AllreduceEveryTypeOpAndSize) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    for (DataType t : kAllDataTypes) {
      for (ReduceOp op : kAllReduceOps) {
        for (size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{4099}}) {
          std::vector<uint8_t> buf(n * DataTypeSize(t));
          for (size_t i = 0; i < n; ++i) {
            SetElementFromDouble(t, buf.data(), i, Value(rank, i));
          }
          Status s = ctx.backend().Allreduce(buf.data(), n, t, op);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (size_t i = 0; i < n; ++i) {
            double want = Value(0, i);
            for (int r = 1; r < size; ++r) {
              double v = Value(r, i);
              want = op == ReduceOp::kSum   ? want + v
                     : op == ReduceOp::kMin ? std::min(want, v)
                     : op == ReduceOp::kMax ? std::max(want, v)
                                            : want * v;
            }
            ASSERT_EQ(ElementAsDouble(t, buf.data(), i), want)
                << DataTypeName(t) << " " << ReduceOpName(op) << " n=" << n
                << " i=" << i << " rank " << rank;
          }
        }
      }
    }
  });
}

// A fused group's tensors reduced where they lie give the bits of the
// same elements reduced as one buffer: pieces empty, single, odd and
// spanning chunks (many with 4 KiB slots), scaled and not.
TEST_P(BackendMatrixTest, AllreducePiecesGiveOneBuffersBits) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    const std::vector<size_t> counts = {0, 1, 17, 0, 4099, 3, 1500};
    const size_t total =
        std::accumulate(counts.begin(), counts.end(), size_t{0});
    for (DataType t : {DataType::kFloat32, DataType::kInt64}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        for (double post : {1.0, 0.5}) {
          const size_t esize = DataTypeSize(t);
          std::vector<uint8_t> whole(total * esize);
          for (size_t i = 0; i < total; ++i) {
            SetElementFromDouble(t, whole.data(), i,
                                 Value(rank, i) + 0.25 * (i % 5));
          }
          std::vector<std::vector<uint8_t>> tensors;
          std::vector<Piece> pieces;
          size_t at = 0;
          for (size_t c : counts) {
            tensors.emplace_back(whole.begin() + at * esize,
                                 whole.begin() + (at + c) * esize);
            at += c;
          }
          for (size_t i = 0; i < counts.size(); ++i) {
            pieces.push_back({tensors[i].data(), counts[i]});
          }
          Status s = ctx.backend().AllreducePieces(pieces, t, op, post);
          ASSERT_TRUE(s.ok()) << s.ToString();
          s = ctx.backend().AllreduceScaled(whole.data(), total, t, op, post);
          ASSERT_TRUE(s.ok()) << s.ToString();
          at = 0;
          for (size_t i = 0; i < counts.size(); ++i) {
            ASSERT_EQ(std::memcmp(tensors[i].data(), whole.data() + at * esize,
                                  counts[i] * esize),
                      0)
                << DataTypeName(t) << " " << ReduceOpName(op) << " post "
                << post << " piece " << i << " rank " << rank;
            at += counts[i];
          }
        }
      }
    }
  });
}

TEST_P(BackendMatrixTest, AllgathervWithDifferentSizesPerRank) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    std::vector<size_t> bytes(size);
    for (int r = 0; r < size; ++r) bytes[r] = (r * 37) % 101;  // rank 0: 0
    std::vector<uint8_t> in(bytes[rank]);
    for (size_t i = 0; i < in.size(); ++i)
      in[i] = static_cast<uint8_t>(rank * 50 + i);
    std::vector<uint8_t> out(
        std::accumulate(bytes.begin(), bytes.end(), size_t{0}));
    ASSERT_TRUE(ctx.backend().Allgatherv(in.data(), out.data(), bytes).ok());
    size_t off = 0;
    for (int r = 0; r < size; ++r) {
      for (size_t i = 0; i < bytes[r]; ++i) {
        ASSERT_EQ(out[off + i], static_cast<uint8_t>(r * 50 + i))
            << r << " " << i;
      }
      off += bytes[r];
    }
  });
}

TEST_P(BackendMatrixTest, AlltoallvWithSplits) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    // Rank s sends (s + d) % 3 + 1 bytes of value s*16+d to rank d.
    auto len = [](int s, int d) {
      return static_cast<size_t>((s + d) % 3 + 1);
    };
    std::vector<size_t> send(size), recv(size);
    std::vector<uint8_t> in;
    for (int d = 0; d < size; ++d) {
      send[d] = len(rank, d);
      recv[d] = len(d, rank);
      in.insert(in.end(), send[d], static_cast<uint8_t>(rank * 16 + d));
    }
    std::vector<uint8_t> out(
        std::accumulate(recv.begin(), recv.end(), size_t{0}));
    Status st = ctx.backend().Alltoallv(in.data(), send, out.data(), recv);
    ASSERT_TRUE(st.ok()) << st.ToString();
    size_t off = 0;
    for (int s = 0; s < size; ++s) {
      for (size_t i = 0; i < recv[s]; ++i) {
        ASSERT_EQ(out[off + i], static_cast<uint8_t>(s * 16 + rank));
      }
      off += recv[s];
    }
  });
}

TEST_P(BackendMatrixTest, ReducescatterUnevenBlocks) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    std::vector<size_t> counts(size);
    for (int r = 0; r < size; ++r) counts[r] = r + 2;
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    std::vector<float> in(total);
    for (size_t i = 0; i < total; ++i)
      in[i] = static_cast<float>(Value(rank, i));
    std::vector<float> out(counts[rank]);
    ASSERT_TRUE(ctx.backend()
                    .Reducescatter(in.data(), out.data(), counts,
                                   DataType::kFloat32, ReduceOp::kSum)
                    .ok());
    size_t offset = 0;
    for (int r = 0; r < rank; ++r) offset += counts[r];
    for (size_t i = 0; i < out.size(); ++i) {
      double want = 0;
      for (int r = 0; r < size; ++r) want += Value(r, offset + i);
      ASSERT_EQ(out[i], want) << i;
    }
  });
}

// Shared memory's reduce-scatter into the input's own block, then its
// allgather from there: the hierarchical allreduce's local phases, which
// copy only the blocks the other ranks need. Blocks of uneven sizes that
// straddle the small slots' chunks.
class ShmInPlaceTest : public BackendMatrixTest {};

TEST_P(ShmInPlaceTest, ReducescatterAndAllgatherInPlace) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    std::vector<size_t> counts(size), bytes(size);
    for (int r = 0; r < size; ++r) {
      counts[r] = 700 + 300 * r;
      bytes[r] = counts[r] * sizeof(float);
    }
    size_t total = std::accumulate(counts.begin(), counts.end(), size_t{0});
    std::vector<float> data(total);
    for (size_t i = 0; i < total; ++i)
      data[i] = static_cast<float>(Value(rank, i));
    size_t offset = 0;
    for (int r = 0; r < rank; ++r) offset += counts[r];
    auto want = [&](size_t i) {
      double sum = 0;
      for (int r = 0; r < size; ++r) sum += Value(r, i);
      return static_cast<float>(sum);
    };
    float* mine = data.data() + offset;
    Status s = ctx.backend().Reducescatter(data.data(), mine, counts,
                                           DataType::kFloat32, ReduceOp::kSum);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < counts[rank]; ++i) {
      ASSERT_EQ(mine[i], want(offset + i)) << i;
    }
    s = ctx.backend().Allgatherv(mine, data.data(), bytes);
    ASSERT_TRUE(s.ok()) << s.ToString();
    for (size_t i = 0; i < total; ++i) ASSERT_EQ(data[i], want(i)) << i;
  });
}

TEST_P(BackendMatrixTest, BroadcastFromEveryRootAnySize) {
  const int size = std::get<0>(GetParam());
  RunRanksOn(size, [&](Context& ctx, int rank) {
    for (int root = 0; root < size; ++root) {
      for (size_t n : {size_t{0}, size_t{1}, size_t{5000}, size_t{100000}}) {
        std::vector<uint8_t> buf(n);
        for (size_t i = 0; i < n; ++i)
          buf[i] = static_cast<uint8_t>(rank * 31 + i);
        ASSERT_TRUE(ctx.backend().Broadcast(buf.data(), n, root).ok());
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(buf[i], static_cast<uint8_t>(root * 31 + i)) << n;
        }
      }
      ASSERT_TRUE(ctx.backend().Barrier().ok());
    }
  });
}

TEST(ShmBackendTest, AbsentPeerIsAnErrorNamingItNotAHang) {
  auto start = std::chrono::steady_clock::now();
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        if (rank == 1) {
          // Arrives too late: rank 0 gives up first.
          std::this_thread::sleep_for(std::chrono::milliseconds(2500));
          return;
        }
        std::vector<float> x(10, 1.0f);
        Status s = ctx.backend().Allreduce(x.data(), x.size(),
                                           DataType::kFloat32, ReduceOp::kSum);
        EXPECT_EQ(s.code(), StatusCode::kUnavailable) << s.ToString();
        EXPECT_NE(s.ToString().find("local rank 1 did not arrive"),
                  std::string::npos)
            << s.ToString();
        // The failure sticks.
        EXPECT_FALSE(ctx.backend().Barrier().ok());
      },
      [](WorkerConfig& c) {
        c.gloo_timeout = std::chrono::milliseconds(1000);
      });
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
}

// Reading the peers' buffers (single copy) reduces in rank order as the
// segment's path does: the same bits for every element, the scaled
// (averaged) form included, across pieces and uneven shares.
TEST(ShmBackendTest, SingleCopyGivesTheTwoCopyPathsBits) {
  RunRanks(
      3,
      [&](Context& ctx, int rank) {
        const size_t n = 300007;  // 1.2 MB: single copy; fifths: two copies
        std::vector<float> x(n);
        uint32_t seed = 12345u + static_cast<uint32_t>(rank);
        for (float& v : x) {
          seed = seed * 1664525u + 1013904223u;
          v = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
        }
        for (double post : {1.0, 1.0 / 3}) {
          std::vector<float> direct = x, pieces = x;
          Status s = ctx.backend().AllreduceScaled(
              direct.data(), n, DataType::kFloat32, ReduceOp::kSum, post);
          ASSERT_TRUE(s.ok()) << s.ToString();
          for (size_t at = 0; at < n; at += n / 5 + 1) {
            const size_t c = std::min(n / 5 + 1, n - at);
            s = ctx.backend().AllreduceScaled(pieces.data() + at, c,
                                              DataType::kFloat32,
                                              ReduceOp::kSum, post);
            ASSERT_TRUE(s.ok()) << s.ToString();
          }
          ASSERT_EQ(std::memcmp(direct.data(), pieces.data(), n * 4), 0)
              << "post " << post;
        }
      },
      [](WorkerConfig& c) { c.shm_single_copy_bytes = 1 << 20; });
}

// Single copy takes the sizes from its threshold up to its limit; the
// others go through the segment.
TEST(ShmBackendTest, SingleCopyRunsFromItsThresholdUpToItsLimit) {
  const uint64_t before = ShmAllreducePaths().single_copy;
  RunRanks(
      2,
      [&](Context& ctx, int rank) {
        for (size_t n : {size_t{100000}, size_t{300000}, size_t{600000}}) {
          std::vector<float> x(n, static_cast<float>(rank + 1));
          ASSERT_TRUE(
              ctx.backend()
                  .Allreduce(x.data(), n, DataType::kFloat32, ReduceOp::kSum)
                  .ok());
          ASSERT_EQ(x.front(), 3.0f);
          ASSERT_EQ(x.back(), 3.0f);
        }
      },
      [](WorkerConfig& c) {
        c.shm_single_copy_bytes = 1 << 20;  // 400 KB: below
        c.shm_single_copy_limit = 2 << 20;  // 2.4 MB: above
      });
  // Only the 1.2 MB allreduce, on both ranks.
  EXPECT_EQ(ShmAllreducePaths().single_copy - before, 2u);
}

// Inputs for the shared-buffer tests: pseudo-random floats per rank.
std::vector<float> Noise(int rank, size_t n) {
  std::vector<float> x(n);
  uint32_t seed = 777u + static_cast<uint32_t>(rank);
  for (float& v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = static_cast<float>(seed >> 8) / 16777216.0f - 0.5f;
  }
  return x;
}

// The sizes of the shared-buffer tests: one element, odd ones, many chunks
// of small slots, and past the single-copy threshold (1 MiB here).
constexpr size_t kSharedSizes[] = {1, 17, 4099, 300007};

struct SharedCase {
  int size;
  bool small_slots;  // 4 KiB slots: the first of many chunks decides
};

void PrintTo(const SharedCase& c, std::ostream* os) {
  *os << c.size << " ranks" << (c.small_slots ? ", 4 KiB slots" : "");
}

class SharedBufferTest : public ::testing::TestWithParam<SharedCase> {};

// Every rank's buffer lies in a shared block (at an offset inside it):
// each allreduce runs straight between the buffers, and every rank ends
// with the bits plain buffers get (rank order, scaled or not), whatever
// path its size would take otherwise. Then only some ranks' buffers do:
// the usual paths, the same bits.
TEST_P(SharedBufferTest, ReduceBetweenTheBuffersWithThePlainPathsBits) {
  const SharedCase c = GetParam();
  for (bool everyone : {true, false}) {
    const uint64_t before = ShmAllreducePaths().shared_buffers;
    int calls = 0;
    RunRanks(
        c.size,
        [&](Context& ctx, int rank) {
          const bool shared = everyone || rank % 2 == 0;
          for (size_t n : kSharedSizes) {
            for (double post : {1.0, 1.0 / c.size}) {
              std::vector<float> plain = Noise(rank, n);
              StatusOr<void*> block =
                  ShmHeap::Process().Allocate((n + 16) * sizeof(float));
              ASSERT_TRUE(block.ok());
              float* buf = static_cast<float*>(*block) + 16;
              if (!shared) buf = new float[n];
              std::memcpy(buf, plain.data(), n * sizeof(float));
              // The shared buffer first: nothing of this input is in the
              // slots yet.
              Status s = ctx.backend().AllreduceScaled(
                  buf, n, DataType::kFloat32, ReduceOp::kSum, post);
              ASSERT_TRUE(s.ok()) << s.ToString();
              s = ctx.backend().AllreduceScaled(
                  plain.data(), n, DataType::kFloat32, ReduceOp::kSum, post);
              ASSERT_TRUE(s.ok()) << s.ToString();
              EXPECT_EQ(std::memcmp(buf, plain.data(), n * sizeof(float)), 0)
                  << "n " << n << " post " << post << " rank " << rank;
              if (rank == 0) ++calls;
              // Nothing may be freed before every peer is done with it.
              ASSERT_TRUE(ctx.backend().Barrier().ok());
              if (!shared) delete[] buf;
              ASSERT_TRUE(ShmHeap::Process().Free(*block).ok());
            }
          }
          // Another type and op, in place in one block.
          StatusOr<void*> block = ShmHeap::Process().Allocate(4099 * 4);
          ASSERT_TRUE(block.ok());
          std::vector<int32_t> local(4099);
          int32_t* ints = shared ? static_cast<int32_t*>(*block) : local.data();
          for (int i = 0; i < 4099; ++i) ints[i] = (i * 7 + rank * 13) % 101;
          ASSERT_TRUE(
              ctx.backend()
                  .Allreduce(ints, 4099, DataType::kInt32, ReduceOp::kMax)
                  .ok());
          for (int i = 0; i < 4099; ++i) {
            int32_t want = 0;
            for (int r = 0; r < c.size; ++r) {
              want = std::max(want, (i * 7 + r * 13) % 101);
            }
            ASSERT_EQ(ints[i], want) << i;
          }
          if (rank == 0) ++calls;
          ASSERT_TRUE(ctx.backend().Barrier().ok());
          ASSERT_TRUE(ShmHeap::Process().Free(*block).ok());
        },
        [&](WorkerConfig& w) {
          w.shm_single_copy_bytes = 1 << 20;
          if (c.small_slots) w.shm_slot_bytes = 4096;
        });
    // Ranks are threads here: the count is the process's, every rank's.
    const uint64_t ran = ShmAllreducePaths().shared_buffers - before;
    if (everyone) {
      EXPECT_EQ(ran, static_cast<uint64_t>(calls) * c.size);
    } else {
      EXPECT_EQ(ran, 0u);
    }
  }
}

// "np4_gloo_halving": a (ranks, backend) case's name.
std::string RanksAndBackendName(
    const ::testing::TestParamInfo<std::tuple<int, const char*>>& info) {
  std::string b = std::get<1>(info.param);
  std::replace(b.begin(), b.end(), '-', '_');
  return "np" + std::to_string(std::get<0>(info.param)) + "_" + b;
}

INSTANTIATE_TEST_SUITE_P(
    Ranks, SharedBufferTest,
    ::testing::Values(SharedCase{2, false}, SharedCase{3, false},
                      SharedCase{4, false}, SharedCase{2, true},
                      SharedCase{3, true}),
    [](const auto& info) {
      return "np" + std::to_string(info.param.size) +
             (info.param.small_slots ? "_small_slots" : "");
    });

INSTANTIATE_TEST_SUITE_P(WorldSizesAndShm, ShmInPlaceTest,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values("shm",
                                                              "shm-small")),
                         RanksAndBackendName);

// Past four ranks the doubling and the halving fold the ranks beyond a
// power of two in (5, 6, 7); the halving takes more than three. (At 8 the
// int8 product of the test's values would wrap.)
INSTANTIATE_TEST_SUITE_P(WorldSizesPastFour, BackendMatrixTest,
                         ::testing::Combine(::testing::Values(4, 5, 6, 7),
                                            ::testing::Values("gloo-halving",
                                                              "gloo-doubling")),
                         RanksAndBackendName);

INSTANTIATE_TEST_SUITE_P(
    WorldSizesAndBackends, BackendMatrixTest,
    ::testing::Combine(::testing::Values(1, 2, 3, 4),
                       ::testing::Values("gloo", "gloo-streams",
                                         "gloo-doubling", "gloo-only", "shm",
                                         "shm-small", "shm-direct")),
    RanksAndBackendName);

}  // namespace
}  // namespace hvd::runtime
