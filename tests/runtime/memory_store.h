// A store in memory, shared by the threads of a test (the backends and
// control planes bootstrap through it as through the rendezvous).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/store.h"

namespace hvd::runtime {

class MemoryStore final : public Store {
 public:
  Status Set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    kv_[key] = value;
    cv_.notify_all();
    return Status::Ok();
  }
  StatusOr<std::vector<std::string>> Wait(
      const std::vector<std::string>& keys,
      std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mu_);
    bool ok = cv_.wait_for(lock, timeout, [&] {
      for (const auto& k : keys)
        if (!kv_.count(k)) return false;
      return true;
    });
    if (!ok) return Status::DeadlineExceeded("store", "timed out");
    std::vector<std::string> out;
    for (const auto& k : keys) out.push_back(kv_[k]);
    return out;
  }
  std::string Get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return kv_[key];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, std::string> kv_;
};

}  // namespace hvd::runtime
