#include "runtime/store.h"

#include "rendezvous/client.h"

namespace hvd::runtime {
namespace {

class RendezvousStore final : public Store {
 public:
  RendezvousStore(rendezvous::RendezvousClient* client, std::string prefix)
      : client_(client), prefix_(std::move(prefix)) {}

  Status Set(const std::string& key, const std::string& value) override {
    return client_->Set(prefix_ + key, value);
  }

  StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) override {
    std::vector<std::string> full;
    full.reserve(keys.size());
    for (const std::string& k : keys) full.push_back(prefix_ + k);
    return client_->Wait(full, timeout);
  }

 private:
  rendezvous::RendezvousClient* client_;
  std::string prefix_;
};

}  // namespace

std::unique_ptr<Store> MakeRendezvousStore(rendezvous::RendezvousClient* client,
                                           std::string prefix) {
  return std::make_unique<RendezvousStore>(client, std::move(prefix));
}

}  // namespace hvd::runtime
