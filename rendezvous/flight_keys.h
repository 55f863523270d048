// Where flight recorder dumps travel through a job's rendezvous: the
// launcher counts its requests under kFlightCountKey and sets request N's
// key; every worker keeps a wait on the next request armed and answers
// under its dump key (runtime/context.cc, launcher/flight_dump.cc). A
// worker asks the launcher for a dump under kFlightAskKey.
#pragma once

#include <cstdint>
#include <string>

namespace hvd::rendezvous {

inline constexpr const char* kFlightCountKey = "hvd/flight-requests";

inline std::string FlightRequestKey(uint64_t n) {
  return "hvd/flight-request/" + std::to_string(n);
}

// A worker's ask for every rank's recorder (rank 0's stall inspector):
// "TOKEN KIND TEXT", TOKEN unique to the ask, KIND "stall" or "shutdown"
// (the job ends once the report is out), TEXT what stalled. The launcher
// reads it about once a second, dumps, and sets FlightAskedKey(TOKEN).
inline constexpr const char* kFlightAskKey = "hvd/flight-ask";

// A worker whose collectives failed leaves its recorder here, for the
// launcher's dump after it is gone.
inline std::string FlightLastKey(const std::string& host, int slot) {
  return "hvd/flight-last/" + host + "/" + std::to_string(slot);
}

// Each worker's recent submissions (runtime FlightRecorder::Arrivals,
// after a first line "RANK HOST"), published with its metrics, for the
// launcher's count of who arrives last: this prefix + HOST/SLOT.
inline constexpr const char* kArrivalsKeyPrefix = "hvd/arrivals/";

// Set by a launcher that answers asks (horovodrun): without it, a worker
// does not wait for a report before a stall shutdown.
inline constexpr const char* kFlightAnswererKey = "hvd/flight-answerer";

inline std::string FlightAskedKey(const std::string& token) {
  return "hvd/flight-asked/" + token;
}

inline std::string FlightDumpKey(uint64_t n, const std::string& host,
                                 int slot) {
  return "hvd/flight/" + std::to_string(n) + "/" + host + "/" +
         std::to_string(slot);
}

}  // namespace hvd::rendezvous
