#include "runtime/backends/gloo/gloo_backend.h"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>

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

class GlooBackend final : public Backend {
 public:
  GlooBackend(std::shared_ptr<gloo::rendezvous::Context> context,
              std::shared_ptr<gloo::transport::Device> device, int rank,
              std::chrono::milliseconds timeout)
      : context_(std::move(context)),
        device_(std::move(device)),
        rank_(rank),
        timeout_(timeout) {}

  Status Allreduce(void* data, size_t count, DataType type,
                   ReduceKind) override {
    if (count == 0) return Status::Ok();
    return Run("allreduce", [&] {
      gloo::AllreduceOptions opts(context_);
      opts.setTimeout(timeout_);
      opts.setTag(NextTag());
      if (type == DataType::kFloat32) {
        float* p = static_cast<float*>(data);
        opts.setInput(p, count);
        opts.setOutput(p, count);
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(
                &gloo::sum<float>));
      } else {
        double* p = static_cast<double*>(data);
        opts.setInput(p, count);
        opts.setOutput(p, count);
        opts.setReduceFunction(
            static_cast<void (*)(void*, const void*, const void*, size_t)>(
                &gloo::sum<double>));
      }
      gloo::allreduce(opts);
    });
  }

  Status Broadcast(void* data, size_t bytes, int root) override {
    if (root < 0 || root >= context_->size) {
      return Status::InvalidArgument("broadcast root",
                                     std::to_string(root) +
                                         " is not a rank of a job of " +
                                         std::to_string(context_->size));
    }
    if (bytes == 0) return Status::Ok();
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

  std::shared_ptr<gloo::rendezvous::Context> context_;
  std::shared_ptr<gloo::transport::Device> device_;
  int rank_;
  std::chrono::milliseconds timeout_;
  uint32_t tag_ = 0;
  Status broken_;
};

}  // namespace

StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(const GlooOptions& options,
                                                     Store& store) {
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
  // Nobody may tear down before everyone has finished connecting: a rank
  // that exits right after init() would otherwise reset a peer's
  // half-finished handshake.
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
  return std::unique_ptr<Backend>(new GlooBackend(
      std::move(context), std::move(device), options.rank, options.op_timeout));
}

}  // namespace hvd::runtime
