// libhvd: the collective runtime that training programs link.
//
// This is the whole public surface a worker includes. Call hvd::init() once
// before anything else; it joins the job that horovodrun started (or runs
// as a single process of size 1 when started without a launcher) and
// connects every rank to every other over Gloo.
//
// Thread-safety: init() and shutdown() must not race with other calls. The
// collectives are blocking and must be called in the same order on every
// rank; calling them from several threads at once is not supported in this
// version (the asynchronous engine lifts that).
//
// Errors: every call returns hvd::Status. A failed collective (a dead peer,
// a timeout after HOROVOD_GLOO_TIMEOUT_SECONDS) names this rank and the
// operation; the job cannot continue after it, so print it and exit non-zero.
#pragma once

#include <cstddef>

#include "common/status.h"

namespace hvd {

// Joins the job. FailedPrecondition when called twice without shutdown().
Status init();
bool is_initialized();

// The assignment of this process. Each returns -1 before init().
int rank();
int size();
int local_rank();
int local_size();
int cross_rank();
int cross_size();
// The GPU this rank should use, or -1 when its host has none.
int gpu();

enum class ReduceOp { kSum, kAverage };

// In-place allreduce of `count` elements over all ranks.
Status allreduce(float* data, size_t count, ReduceOp op);
Status allreduce(double* data, size_t count, ReduceOp op);

// Copies `bytes` bytes of rank `root`'s buffer into every rank's buffer.
Status broadcast(void* data, size_t bytes, int root);

// Returns once every rank has called barrier().
Status barrier();

// Closes connections. Safe to call when not initialized.
Status shutdown();

}  // namespace hvd
