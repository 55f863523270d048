// A small synchronous client of etcd's v3 API (proto/etcd.proto), for the
// rendezvous daemon's etcd store: reads by prefix, transactions, leases
// and a watch for one key's deletion. It speaks to one member of the
// cluster at a time and moves to the next listed one when a call finds
// its member unreachable, retrying with backoff until the call's time is
// up; TLS and etcd's user/password auth as etcd offers them. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::rendezvous::store {

struct EtcdOptions {
  std::vector<std::string> endpoints;  // HOST:PORT, at least one
  // TLS when ca_pem is set; cert_pem and key_pem for client certificates.
  std::string ca_pem, cert_pem, key_pem;
  // etcd's auth (Authenticate), when user is set.
  std::string user, password;
  // How long one call may take in all, retries included.
  std::chrono::milliseconds call_timeout{10000};
};

struct EtcdKv {
  std::string key, value;
  int64_t create_revision = 0, mod_revision = 0, lease = 0;
};

// A transaction's condition on one key: its creation or last modification
// revision equals `revision` (0: the key does not exist).
struct EtcdCompare {
  enum class Target { kCreateRevision, kModRevision };
  Target target = Target::kCreateRevision;
  std::string key;
  int64_t revision = 0;
};

// One operation of a transaction: put a key (with a lease, or 0), delete
// [key, range_end) (range_end empty: the key alone), or read the key.
struct EtcdOp {
  enum class Kind { kPut, kDelete, kGet };
  Kind kind = Kind::kPut;
  std::string key, value, range_end;
  int64_t lease = 0;
};

struct EtcdTxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
  // For each kGet of the branch that ran, the key if it exists.
  std::vector<std::optional<EtcdKv>> gets;
};

class EtcdClient {
 public:
  static StatusOr<std::unique_ptr<EtcdClient>> Connect(
      const EtcdOptions& options);
  ~EtcdClient();

  // Every key under `prefix`, in key order, read in pages at one revision
  // (given back in `revision` when asked).
  StatusOr<std::vector<EtcdKv>> List(const std::string& prefix,
                                     int64_t* revision = nullptr);
  StatusOr<std::optional<EtcdKv>> Get(const std::string& key);
  // If every compare holds, runs `then`, otherwise `otherwise`.
  StatusOr<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compares,
                              const std::vector<EtcdOp>& then,
                              const std::vector<EtcdOp>& otherwise);

  StatusOr<int64_t> GrantLease(int64_t ttl_seconds);
  // Renews `lease` once; NotFound when it has expired.
  Status KeepAlive(int64_t lease);
  Status RevokeLease(int64_t lease);

  // Returns once `key` is deleted at a revision after `after`, or at
  // `until`, or when the watch ends early; the caller looks again.
  void WatchForDelete(const std::string& key, int64_t after,
                      std::chrono::steady_clock::time_point until);

  // The end of the range of keys that start with `prefix`.
  static std::string PrefixEnd(const std::string& prefix);
  // The member the client speaks to now ("HOST:PORT").
  std::string endpoint() const;

  class Impl;

 private:
  explicit EtcdClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// "etcd://HOST:PORT[,HOST:PORT...]" (the daemon's --store) to endpoints.
StatusOr<std::vector<std::string>> ParseEtcdUrl(const std::string& url);

}  // namespace hvd::rendezvous::store
