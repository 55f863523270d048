// What hvd-rendezvousd reports about itself (--metrics-port): its jobs and
// joined workers, and every call by method: how many, with what outcome,
// how long they took, and those refused, by reason.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "rendezvous/job_table.h"

namespace hvd::rendezvous {

class ServerStats {
 public:
  // A call of `method` ("create_job", "join", "wait", ...) ended with `s`
  // after `seconds` (blocking calls: their wait included).
  void Record(const std::string& method, const Status& s, double seconds);

  // The exposition, with the table's jobs and joined workers now.
  std::string Exposition(const JobTable& table) const;

 private:
  struct Method {
    std::map<std::string, uint64_t> by_code;  // code name -> calls
    std::vector<uint64_t> buckets;
    double seconds = 0;
  };
  mutable std::mutex mu_;
  std::map<std::string, Method> methods_;  // guarded by mu_
};

}  // namespace hvd::rendezvous
