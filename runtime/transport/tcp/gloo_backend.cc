#include "runtime/transport/tcp/gloo_backend.h"

#include <gloo/allgatherv.h>
#include <gloo/allreduce.h>
#include <gloo/alltoallv.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <atomic>
#include <cstring>

#include "runtime/transport/tcp/tcp_ring.h"

namespace hvd::runtime {
namespace {

// Gloo's bootstrap speaks gloo::rendezvous::Store and expects exceptions;
// this adapter is the only place where our Status turns into one.
class GlooStoreAdapter final : public gloo::rendezvous::Store {
 public:
  GlooStoreAdapter(runtime::Store& store, std::chrono::milliseconds timeout)
      : store_(store), timeout_(timeout) {}

  void set(const std::string& key, const std::vector<char>& data) override {
    Status s = store_.Set(key, std::string(data.begin(), data.end()));
    if (!s.ok()) throw gloo::IoException(s.ToString());
  }

  // Gloo calls get after wait, but a blocking get is what its own stores
  // do, and it costs the same single call.
  std::vector<char> get(const std::string& key) override {
    auto values = store_.Wait({key}, timeout_);
    if (!values.ok()) throw gloo::IoException(values.status().ToString());
    const std::string& v = (*values)[0];
    return std::vector<char>(v.begin(), v.end());
  }

  void wait(const std::vector<std::string>& keys) override {
    wait(keys, timeout_);
  }

  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    auto values = store_.Wait(keys, timeout);
    if (!values.ok()) throw gloo::IoException(values.status().ToString());
  }

 private:
  runtime::Store& store_;
  std::chrono::milliseconds timeout_;
};

// How many Gloo meshes this process connected (tests: a job whose
// collectives all run on hvd's sockets connects none).
std::atomic<uint64_t> g_meshes{0};

// Connects Gloo's full mesh of `device` through `store`, and waits until
// every rank has: nobody may tear down before everyone has finished
// connecting (a rank that exits at once would otherwise reset a peer's
// half-finished handshake).
StatusOr<std::shared_ptr<gloo::rendezvous::Context>> ConnectGloo(
    const GlooOptions& options, Store& store,
    std::shared_ptr<gloo::transport::Device> device) {
  const std::string where = "rank " + std::to_string(options.rank) + ": gloo";
  auto context =
      std::make_shared<gloo::rendezvous::Context>(options.rank, options.size);
  context->setTimeout(options.connect_timeout);
  GlooStoreAdapter adapter(store, options.connect_timeout);
  try {
    context->connectFullMesh(adapter, device);
  } catch (const std::exception& e) {
    return Status::Unavailable(
        where,
        std::string("connecting to the other ranks failed: ") + e.what());
  }
  try {
    gloo::BarrierOptions barrier(context);
    barrier.setTimeout(options.connect_timeout);
    gloo::barrier(barrier);
  } catch (const std::exception& e) {
    return Status::Unavailable(
        where,
        std::string("the other ranks did not finish connecting: ") + e.what());
  }
  context->setTimeout(options.op_timeout);
  g_meshes.fetch_add(1);
  return context;
}

// Where hvd's ring is on (ring_), it runs every collective and Gloo's mesh
// (every rank to every other) is never made: each rank holds its ring's
// and doubling's sockets, and sockets to every peer once it runs an
// alltoall. With the ring off (HOROVOD_TCP_RING_DISABLE=1) every
// collective runs on Gloo, its mesh connected at the start.
class GlooBackend final : public Backend, public TcpKnob {
 public:
  GlooBackend(const GlooOptions& options,
              std::shared_ptr<gloo::transport::Device> device,
              std::unique_ptr<Store> store, std::unique_ptr<TcpRing> ring,
              std::shared_ptr<gloo::rendezvous::Context> context)
      : device_(std::move(device)),
        store_(std::move(store)),
        context_(std::move(context)),
        ring_(std::move(ring)),
        rank_(options.rank),
        size_(options.size),
        timeout_(options.op_timeout) {}

  void SetSeveralStreams(bool on) override {
    if (ring_) ring_->SetSeveralStreams(on);
  }
  void SetWideCrossovers(bool on) override {
    if (ring_) ring_->SetWideCrossovers(on);
  }

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceOp op) override {
    if (count == 0) return Status::Ok();
    if (ring_) return ring_->Allreduce(data, count, type, op);
    return Run("allreduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      SetTypedBuffers(opts, data, count, DataTypeSize(type));
      // Gloo calls the function with element counts; the kernel knows the
      // real type. The captures live as long as this call.
      opts.setReduceFunction(
          [type, op](void* c, const void* a, const void* b, size_t n) {
            ReduceBuffers(type, op, c, a, b, n);
          });
      gloo::allreduce(opts);
    });
  }

  Status Allgatherv(const void* in, void* out,
                    const std::vector<size_t>& bytes) override {
    if (bytes.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("allgatherv", "needs one size per rank");
    }
    size_t total = 0;
    for (size_t b : bytes) total += b;
    if (total == 0) return Status::Ok();
    if (ring_) {
      return ring_->Allgatherv(in, out, bytes);
    }
    return Run("allgatherv", [&] {
      gloo::AllgathervOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      // Gloo wants an input pointer even for an empty contribution.
      static uint8_t empty = 0;
      opts.setInput(
          bytes[rank_] ? static_cast<uint8_t*>(const_cast<void*>(in)) : &empty,
          bytes[rank_]);
      opts.setOutput(static_cast<uint8_t*>(out), bytes);
      gloo::allgatherv(opts);
    });
  }

  Status Alltoallv(const void* in, const std::vector<size_t>& send_bytes,
                   void* out, const std::vector<size_t>& recv_bytes) override {
    const size_t n = static_cast<size_t>(size_);
    if (send_bytes.size() != n || recv_bytes.size() != n) {
      return Status::InvalidArgument("alltoallv", "needs one size per rank");
    }
    size_t sent = 0, received = 0;
    for (size_t r = 0; r < n; ++r) {
      sent += send_bytes[r];
      received += recv_bytes[r];
    }
    if (ring_) {
      return ring_->Alltoallv(in, send_bytes, out, recv_bytes, *store_);
    }
    return Run("alltoallv", [&] {
      gloo::AlltoallvOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      static uint8_t empty_in = 0, empty_out = 0;
      std::vector<int64_t> s(send_bytes.begin(), send_bytes.end());
      std::vector<int64_t> r(recv_bytes.begin(), recv_bytes.end());
      opts.setInput(
          sent ? static_cast<uint8_t*>(const_cast<void*>(in)) : &empty_in, s);
      opts.setOutput(received ? static_cast<uint8_t*>(out) : &empty_out, r);
      gloo::alltoallv(opts);
    });
  }

  Status Reducescatter(const void* in, void* out,
                       const std::vector<size_t>& counts, DataType type,
                       ReduceOp op) override {
    if (counts.size() != static_cast<size_t>(size_)) {
      return Status::InvalidArgument("reducescatter",
                                     "needs one count per rank");
    }
    size_t total = 0, offset = 0;
    for (size_t r = 0; r < counts.size(); ++r) {
      if (static_cast<int>(r) < rank_) offset += counts[r];
      total += counts[r];
    }
    const size_t esize = DataTypeSize(type);
    if (ring_) {
      return ring_->Reducescatter(in, out, counts, type, op);
    }
    // On Gloo: an allreduce into scratch, keeping this rank's block (Gloo
    // has no reduce-scatter of blocks of any size).

    scratch_.assign(static_cast<const uint8_t*>(in),
                    static_cast<const uint8_t*>(in) + total * esize);
    HVD_RETURN_IF_ERROR(Allreduce(scratch_.data(), total, type, op));
    std::memcpy(out, scratch_.data() + offset * esize, counts[rank_] * esize);
    return Status::Ok();
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      return Status::InvalidArgument("broadcast root",
                                     std::to_string(root) +
                                         " is not a rank of a job of " +
                                         std::to_string(size_));
    }
    if (bytes == 0) return Status::Ok();
    if (ring_) {
      return ring_->Broadcast(data, bytes, root);
    }
    return Run("broadcast", [&] {
      gloo::BroadcastOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      opts.setRoot(root);
      uint8_t* p = static_cast<uint8_t*>(data);
      if (rank_ == root) opts.setInput(p, bytes);
      opts.setOutput(p, bytes);
      gloo::broadcast(opts);
    });
  }

  Status Barrier() override {
    if (ring_) return ring_->Barrier();
    return Run("barrier", [&] {
      gloo::BarrierOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      gloo::barrier(opts);
    });
  }

 private:
  template <typename F>
  Status Run(const char* what, F&& body) {
    if (!broken_.ok()) return broken_;
    try {
      body();
      return Status::Ok();
    } catch (const std::exception& e) {
      // A Gloo pair that failed stays failed; later calls fail fast with the
      // first cause instead of hanging on a dead peer.
      broken_ = Status::Unavailable(
          "rank " + std::to_string(rank_) + ": gloo " + what,
          std::string(e.what()) +
              " (a peer died or timed out; see HOROVOD_GLOO_TIMEOUT_SECONDS)");
      return broken_;
    }
  }

  uint32_t NextTag() { return tag_++; }

  // Gloo sizes its chunks by the element type; any type of the right width
  // will do, since the reduction kernel knows the real one.
  static void SetTypedBuffers(gloo::AllreduceOptions& opts, void* data,
                              size_t count, size_t esize) {
    switch (esize) {
      case 1:
        opts.setInput(static_cast<uint8_t*>(data), count);
        opts.setOutput(static_cast<uint8_t*>(data), count);
        break;
      case 2:
        opts.setInput(static_cast<uint16_t*>(data), count);
        opts.setOutput(static_cast<uint16_t*>(data), count);
        break;
      case 4:
        opts.setInput(static_cast<uint32_t*>(data), count);
        opts.setOutput(static_cast<uint32_t*>(data), count);
        break;
      default:
        opts.setInput(static_cast<uint64_t*>(data), count);
        opts.setOutput(static_cast<uint64_t*>(data), count);
        break;
    }
  }

  std::shared_ptr<gloo::transport::Device> device_;  // the context's
  std::unique_ptr<Store> store_;  // for the ring's alltoall sockets
  std::shared_ptr<gloo::rendezvous::Context> context_;  // null: the ring's
  std::unique_ptr<TcpRing> ring_;  // hvd's own sockets, where there are
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 0;
  Status broken_;
  std::vector<uint8_t> scratch_;
};

}  // namespace

uint64_t GlooMeshesConnected() { return g_meshes.load(); }

StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(
    const GlooOptions& options, std::unique_ptr<Store> store) {
  // Gloo writes to sockets that a dead peer has closed. With SIGPIPE at its
  // default the process would die on the spot instead of failing the
  // collective with a message naming the peer; a program's own handler is
  // left alone.
  struct sigaction current;
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL) {
    signal(SIGPIPE, SIG_IGN);
  }
  std::string where = "rank " + std::to_string(options.rank) + ": gloo";
  gloo::transport::tcp::attr attr;
  if (!options.iface.empty()) {
    attr.iface = options.iface;
  } else {
    attr.hostname = options.hostname;
  }
  std::shared_ptr<gloo::transport::Device> device;
  try {
    device = gloo::transport::tcp::CreateDevice(attr);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        where,
        "cannot use " +
            (options.iface.empty() ? "address '" + options.hostname + "'"
                                   : "interface '" + options.iface + "'") +
            ": " + e.what() + " (check --network-interface)");
  }
  std::unique_ptr<TcpRing> ring;
  std::shared_ptr<gloo::rendezvous::Context> context;
  if (options.ring) {
    TcpRingOptions r;
    static_cast<TcpOptions&>(r) = options;
    r.streams = options.ring_streams;
    r.stream_bytes = options.ring_stream_bytes;
    r.crossovers.doubling_bytes = options.ring_doubling_bytes;
    r.crossovers.halving_bytes = options.ring_halving_bytes;
    HVD_ASSIGN_OR_RETURN(ring, TcpRing::Connect(r, *store));
    // The ring's connections are made alike: a rank that exits right
    // after init() could reset a peer's half-finished handshake, unless
    // everyone has finished connecting.
    HVD_RETURN_IF_ERROR(ring->Barrier());
  } else {
    HVD_ASSIGN_OR_RETURN(context, ConnectGloo(options, *store, device));
  }
  return std::unique_ptr<Backend>(new GlooBackend(
      options, std::move(device), std::move(store), std::move(ring), context));
}

}  // namespace hvd::runtime
