// Every thread's stack, on demand, for flight recorder dumps: a language
// runtime registers a handler that writes its threads' stacks to a file
// when a signal arrives (Python's faulthandler.register), and tells libhvd
// the file and signal (hvd::set_stack_dump). A dump raises the signal on
// its own thread, so the handler runs there before the raise returns, and
// reads what it wrote. Nothing of the kind is set by default.
#pragma once

#include <string>

namespace hvd::runtime {

// `fd` < 0: none.
void SetStackDump(int fd, int signal);

// The stacks as the handler wrote them; "" when none is set or it wrote
// nothing. One dump at a time.
std::string DumpStacks();

}  // namespace hvd::runtime
