// hvd's one error idiom is libhvd's public Status (hvd/status.h, in
// runtime/include): the launcher, the rendezvous and the runtime all use
// that type, so an error crosses from any component into a worker's hands
// unchanged. This header is how the project's own code includes it.
#pragma once

#include "hvd/status.h"
