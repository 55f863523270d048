// The heap of shared blocks and the peers' view of them: what a block is,
// where a buffer lies, and a second mapping (as a peer process makes one,
// through pidfd_getfd) that sees and writes the same memory.
#include "runtime/transport/shm/shm_heap.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace hvd::runtime {
namespace {

TEST(ShmHeapTest, BlocksAreZeroedPageAlignedAndFound) {
  ShmHeap& heap = ShmHeap::Process();
  StatusOr<void*> p = heap.Allocate(10000);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto* bytes = static_cast<uint8_t*>(*p);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes) % sysconf(_SC_PAGESIZE), 0u);
  for (size_t i = 0; i < 10000; ++i) ASSERT_EQ(bytes[i], 0) << i;

  std::optional<ShmBlock> whole = heap.Find(bytes, 10000);
  ASSERT_TRUE(whole);
  EXPECT_NE(whole->id, 0u);
  EXPECT_GE(whole->fd, 0);
  EXPECT_EQ(whole->offset, 0u);
  EXPECT_GE(whole->bytes, 10000u);  // whole pages
  std::optional<ShmBlock> inner = heap.Find(bytes + 4096, 100);
  ASSERT_TRUE(inner);
  EXPECT_EQ(inner->id, whole->id);
  EXPECT_EQ(inner->offset, 4096u);
  // Past its end, or reaching past it: not in the block.
  EXPECT_FALSE(heap.Find(bytes + whole->bytes, 1));
  EXPECT_FALSE(heap.Find(bytes + whole->bytes - 8, 16));
  std::vector<uint8_t> elsewhere(64);
  EXPECT_FALSE(heap.Find(elsewhere.data(), 64));

  // Ids are never reused.
  StatusOr<void*> q = heap.Allocate(1);
  ASSERT_TRUE(q.ok());
  EXPECT_NE(heap.Find(*q, 1)->id, whole->id);
  EXPECT_TRUE(heap.Free(*q).ok());

  EXPECT_TRUE(heap.Free(bytes).ok());
  EXPECT_FALSE(heap.Find(bytes, 1));
}

TEST(ShmHeapTest, FreeingAnythingElseIsAnError) {
  std::vector<uint8_t> not_ours(16);
  Status s = ShmHeap::Process().Free(not_ours.data());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("alloc_shared"), std::string::npos) << s.message();
  StatusOr<void*> p = ShmHeap::Process().Allocate(100);
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(ShmHeap::Process().Free(static_cast<uint8_t*>(*p) + 64).ok());
  EXPECT_TRUE(ShmHeap::Process().Free(*p).ok());
  EXPECT_FALSE(ShmHeap::Process().Free(*p).ok());  // twice
}

// A peer's mapping of a block is the same memory: what one side writes,
// the other reads. Mapped once and kept.
TEST(ShmPeerBlocksTest, APeersMappingIsTheSameMemory) {
  StatusOr<void*> p = ShmHeap::Process().Allocate(1 << 16);
  ASSERT_TRUE(p.ok());
  auto* mine = static_cast<uint8_t*>(*p);
  std::optional<ShmBlock> b = ShmHeap::Process().Find(mine, 1);
  ASSERT_TRUE(b);
  {
    ShmPeerBlocks peers;
    ASSERT_TRUE(peers.Probe(getpid(), *b).ok());
    StatusOr<uint8_t*> theirs = peers.Map(getpid(), *b);
    ASSERT_TRUE(theirs.ok()) << theirs.status().ToString();
    EXPECT_NE(*theirs, mine);  // a mapping of its own
    mine[100] = 7;
    EXPECT_EQ((*theirs)[100], 7);
    (*theirs)[60000] = 9;
    EXPECT_EQ(mine[60000], 9);
    StatusOr<uint8_t*> again = peers.Map(getpid(), *b);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, *theirs);
  }
  EXPECT_TRUE(ShmHeap::Process().Free(mine).ok());
}

// A block freed before a peer maps it is an error, never another file's
// memory.
TEST(ShmPeerBlocksTest, AFreedBlockIsAnError) {
  StatusOr<void*> p = ShmHeap::Process().Allocate(8192);
  ASSERT_TRUE(p.ok());
  ShmBlock b = *ShmHeap::Process().Find(*p, 1);
  ASSERT_TRUE(ShmHeap::Process().Free(*p).ok());
  ShmPeerBlocks peers;
  StatusOr<uint8_t*> m = peers.Map(getpid(), b);
  EXPECT_FALSE(m.ok());
}

// Past kShmPeerBlocksKept blocks the least recently used is unmapped; the
// ones in use stay mapped and correct.
TEST(ShmPeerBlocksTest, KeepsABoundedNumberOfMappings) {
  std::vector<void*> blocks;
  ShmPeerBlocks peers;
  uint8_t* first_view = nullptr;
  for (size_t i = 0; i < kShmPeerBlocksKept + 4; ++i) {
    StatusOr<void*> p = ShmHeap::Process().Allocate(4096);
    ASSERT_TRUE(p.ok());
    blocks.push_back(*p);
    static_cast<uint8_t*>(*p)[0] = static_cast<uint8_t>(i);
    StatusOr<uint8_t*> m = peers.Map(getpid(), *ShmHeap::Process().Find(*p, 1));
    ASSERT_TRUE(m.ok());
    EXPECT_EQ((*m)[0], static_cast<uint8_t>(i));
    if (i == 0) first_view = *m;
    // Block 0 stays the most recently used.
    StatusOr<uint8_t*> again =
        peers.Map(getpid(), *ShmHeap::Process().Find(blocks[0], 1));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, first_view);
  }
  for (void* p : blocks) EXPECT_TRUE(ShmHeap::Process().Free(p).ok());
}

}  // namespace
}  // namespace hvd::runtime
