// Recursive doubling over any number of ranks: who talks to whom, and in
// which order. Pure; the TCP allreduce (tcp_ring) and the control plane's
// exchange (tcp_control) both follow it, and connect to these peers only.
//
// With q the largest power of two <= n, rank q + i ("extra") first hands
// its part to rank i and gets the whole result back at the end; ranks
// below q then swap with the rank whose number differs in bit 0, 1, ...
// of log2(q) bits. After round k a rank holds the part of the 2^(k+1)
// ranks of its aligned block (and of their extras): log2(q) rounds, plus
// two where n is not a power of two. Ranks are numbered host by host, so
// the first rounds stay within a host and only the last ones cross.
#pragma once

#include <vector>

namespace hvd::runtime {

struct DoublingPlan {
  // Rank >= q: the rank it folds into (rank - q). Rank < n - q: the extra
  // rank that folds into it (rank + q). Otherwise -1.
  int fold = -1;
  bool extra = false;  // this rank is past q: it only folds in and waits
  // The round partners in order (none for an extra rank).
  std::vector<int> partners;
  bool operator==(const DoublingPlan&) const = default;
};

DoublingPlan PlanDoubling(int rank, int size);

// q: the largest power of two <= size (size >= 1).
int DoublingPow2(int size);

// Everyone this rank exchanges with in a doubling: the fold partner and
// the round partners, ascending. Symmetric: q is among p's peers exactly
// when p is among q's.
std::vector<int> DoublingPeers(int rank, int size);

}  // namespace hvd::runtime
