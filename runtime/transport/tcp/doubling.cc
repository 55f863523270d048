#include "runtime/transport/tcp/doubling.h"

#include <algorithm>

namespace hvd::runtime {

int DoublingPow2(int size) {
  int q = 1;
  while (q * 2 <= size) q *= 2;
  return q;
}

DoublingPlan PlanDoubling(int rank, int size) {
  DoublingPlan p;
  const int q = DoublingPow2(size);
  if (rank >= q) {
    p.extra = true;
    p.fold = rank - q;
    return p;
  }
  if (rank + q < size) p.fold = rank + q;
  for (int bit = 1; bit < q; bit <<= 1) p.partners.push_back(rank ^ bit);
  return p;
}

std::vector<int> DoublingPeers(int rank, int size) {
  const DoublingPlan p = PlanDoubling(rank, size);
  std::vector<int> peers = p.partners;
  if (p.fold >= 0) peers.push_back(p.fold);
  std::sort(peers.begin(), peers.end());
  return peers;
}

}  // namespace hvd::runtime
