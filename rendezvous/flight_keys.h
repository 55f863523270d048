// Where flight recorder dumps travel through a job's rendezvous: the
// launcher counts its requests under kFlightCountKey and sets request N's
// key; every worker keeps a wait on the next request armed and answers
// under its dump key (runtime/context.cc, launcher/flight_dump.cc).
#pragma once

#include <cstdint>
#include <string>

namespace hvd::rendezvous {

inline constexpr const char* kFlightCountKey = "hvd/flight-requests";

inline std::string FlightRequestKey(uint64_t n) {
  return "hvd/flight-request/" + std::to_string(n);
}

inline std::string FlightDumpKey(uint64_t n, const std::string& host,
                                 int slot) {
  return "hvd/flight/" + std::to_string(n) + "/" + host + "/" +
         std::to_string(slot);
}

}  // namespace hvd::rendezvous
