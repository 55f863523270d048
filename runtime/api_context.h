// What the public API's files share (hvd.cc keeps the contexts).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/context.h"

namespace hvd::internal {

// The context that runs operations of `process_set` on this rank (0: the
// job), or why there is none; `what` names the operation for the error.
StatusOr<runtime::Context*> ContextFor(int process_set,
                                       const std::string& what);

// "[0, 2, 3]", for errors that name a set's ranks.
std::string RankList(const std::vector<int>& ranks);

}  // namespace hvd::internal
