// hvd-rendezvousd's embedded store (--state-dir DIR): the job table's
// records (table_record.h) in a journal on local disk, replaced by a
// snapshot once it grows, and read back when the daemon starts.
//
//   DIR/snapshot       the table as it was at the last compaction, ending
//                      with a frame that names the journal after it
//   DIR/journal-N      every record since, appended before the table
//                      answers the call that made it
//   DIR/lock           held (flock) while a daemon uses DIR
//
// A record is written with write(2) before its call is answered, so
// whatever ends the daemon's process (kill -9, an OOM kill, an upgrade)
// loses no answered change; the journal is flushed to the disk every
// `sync_every` (a host that loses power loses at most that much), and a
// snapshot is flushed before it replaces the journal. A journal that ends
// inside a record (a write the daemon died in, never answered) loses that
// record with a note; any other damage refuses to start, unless the
// operator says to start empty (the damaged files are kept aside).
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "rendezvous/table_record.h"

namespace hvd::rendezvous::store {

struct DiskJournalOptions {
  std::string dir;
  // A journal of this many bytes, and twice the last snapshot's, is
  // replaced by a snapshot.
  size_t compact_bytes = size_t{16} << 20;
  std::chrono::milliseconds sync_every{1000};
  // Damaged state: moved aside to DIR/damaged-TIME/ and the daemon starts
  // empty, instead of refusing to start.
  bool discard_damaged = false;
};

struct Recovered {
  std::vector<TableRecord> records;  // to Restore, in order
  std::vector<std::string> notes;    // what the operator should know
};

class DiskJournal final : public TableJournal {
 public:
  static StatusOr<std::unique_ptr<DiskJournal>> Open(
      const DiskJournalOptions& options, Recovered* recovered);
  ~DiskJournal() override;

  Status Append(const TableRecord& record) override;
  bool WantsSnapshot() const override;
  Status Compact(const std::vector<TableRecord>& snapshot) override;

  size_t journal_bytes() const;

 private:
  explicit DiskJournal(DiskJournalOptions options);
  Status Load(Recovered* recovered);
  Status OpenJournal(uint64_t n, size_t keep_bytes);
  void SyncLoop();

  const DiskJournalOptions o_;
  int lock_fd_ = -1;
  mutable std::mutex mu_;
  int journal_fd_ = -1;        // guarded by mu_
  uint64_t journal_n_ = 1;     // guarded by mu_
  size_t journal_bytes_ = 0;   // guarded by mu_
  size_t snapshot_bytes_ = 0;  // guarded by mu_
  bool dirty_ = false;         // guarded by mu_
  bool stopping_ = false;      // guarded by mu_
  std::condition_variable stop_;
  std::thread syncer_;
};

}  // namespace hvd::rendezvous::store
