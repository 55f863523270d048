#include "rendezvous/store/disk_journal.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "common/files.h"
#include "rendezvous/store/state_codec.h"

namespace hvd::rendezvous::store {
namespace {

Status Failed(const std::string& path, const std::string& what) {
  return Status::Unavailable(path, what + ": " + std::strerror(errno));
}

Status WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed(path, "cannot write");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Failed(dir, "cannot open");
  const int rc = fsync(fd);
  close(fd);
  return rc == 0 ? Status::Ok() : Failed(dir, "cannot sync");
}

// Writes `bytes` to a new file at `path` and flushes it to the disk.
Status WriteDurably(const std::string& path, const std::string& bytes) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Failed(path, "cannot create");
  Status s = WriteAll(fd, bytes, path);
  if (s.ok() && fdatasync(fd) != 0) s = Failed(path, "cannot sync");
  close(fd);
  return s;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The state files in `dir` (snapshot, its temporary, journals).
std::vector<std::string> StateFiles(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name == "snapshot" || name == "snapshot.tmp" ||
          name.rfind("journal-", 0) == 0) {
        names.push_back(name);
      }
    }
    closedir(d);
  }
  return names;
}

std::string JournalName(uint64_t n) { return "journal-" + std::to_string(n); }

}  // namespace

DiskJournal::DiskJournal(DiskJournalOptions options) : o_(std::move(options)) {}

StatusOr<std::unique_ptr<DiskJournal>> DiskJournal::Open(
    const DiskJournalOptions& options, Recovered* recovered) {
  if (options.dir.empty()) {
    return Status::InvalidArgument("--state-dir", "is empty");
  }
  if (mkdir(options.dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Failed(options.dir, "cannot make the state directory");
  }
  std::unique_ptr<DiskJournal> j(new DiskJournal(options));
  const std::string lock = options.dir + "/lock";
  j->lock_fd_ = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (j->lock_fd_ < 0) return Failed(lock, "cannot open");
  if (flock(j->lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    return Status::FailedPrecondition(
        options.dir,
        "in use by another hvd-rendezvousd (each daemon "
        "needs a --state-dir of its own)");
  }
  Status s = j->Load(recovered);
  if (s.code() == StatusCode::kDataLoss && options.discard_damaged) {
    const std::string aside =
        options.dir + "/damaged-" + std::to_string(std::time(nullptr));
    if (mkdir(aside.c_str(), 0700) != 0 && errno != EEXIST) {
      return Failed(aside, "cannot make");
    }
    for (const std::string& name : StateFiles(options.dir)) {
      const std::string from = options.dir + "/" + name;
      if (rename(from.c_str(), (aside + "/" + name).c_str()) != 0) {
        return Failed(from, "cannot move aside");
      }
    }
    *recovered = Recovered{};
    recovered->notes.push_back(s.message() + "; moved to " + aside +
                               " and starting empty (--discard-damaged-state)");
    s = j->Load(recovered);
  }
  if (!s.ok()) {
    if (s.code() != StatusCode::kDataLoss) return s;
    return Status::DataLoss(
        s.message(),
        "the daemon will not start on it: restore the "
        "directory from a backup, or start with "
        "--discard-damaged-state to keep it aside and begin "
        "empty");
  }
  j->syncer_ = std::thread([p = j.get()] { p->SyncLoop(); });
  return j;
}

Status DiskJournal::Load(Recovered* recovered) {
  uint64_t n = 1;
  const std::string snapshot = o_.dir + "/snapshot";
  if (Exists(snapshot)) {
    HVD_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(snapshot));
    HVD_ASSIGN_OR_RETURN(DecodedFile f, DecodeStateFile(bytes, snapshot));
    if (!f.next_journal) {
      return Status::DataLoss(snapshot,
                              "truncated (it ends before its end frame)");
    }
    n = *f.next_journal;
    snapshot_bytes_ = bytes.size();
    recovered->records = std::move(f.records);
  }
  const std::string journal = o_.dir + "/" + JournalName(n);
  size_t keep = 0;
  if (Exists(journal)) {
    HVD_ASSIGN_OR_RETURN(std::string bytes, ReadWholeFile(journal));
    HVD_ASSIGN_OR_RETURN(DecodedFile f, DecodeStateFile(bytes, journal));
    if (f.next_journal) {
      return Status::DataLoss(journal, "holds a snapshot's end frame");
    }
    if (f.torn_tail) {
      recovered->notes.push_back(
          journal + " ends inside a record (" +
          std::to_string(bytes.size() - f.good_bytes) +
          " bytes of a write the daemon died in, never answered): dropped");
    }
    keep = f.good_bytes;
    for (TableRecord& r : f.records) {
      recovered->records.push_back(std::move(r));
    }
  }
  // Left by a compaction that stopped half way: the snapshot says which
  // journal follows it, and the others are older or never used.
  for (const std::string& name : StateFiles(o_.dir)) {
    if (name != "snapshot" && name != JournalName(n)) {
      unlink((o_.dir + "/" + name).c_str());
    }
  }
  return OpenJournal(n, keep);
}

Status DiskJournal::OpenJournal(uint64_t n, size_t keep) {
  const std::string path = o_.dir + "/" + JournalName(n);
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return Failed(path, "cannot open");
  const size_t magic = std::strlen(kStateMagic);
  if (keep < magic) keep = 0;
  Status s;
  if (ftruncate(fd, static_cast<off_t>(keep)) != 0) {
    s = Failed(path, "cannot truncate");
  } else if (lseek(fd, static_cast<off_t>(keep), SEEK_SET) < 0) {
    s = Failed(path, "cannot seek");
  } else if (keep == 0) {
    s = WriteAll(fd, kStateMagic, path);
    keep = magic;
    if (s.ok() && fdatasync(fd) != 0) s = Failed(path, "cannot sync");
    if (s.ok()) s = SyncDir(o_.dir);
  }
  if (!s.ok()) {
    close(fd);
    return s;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (journal_fd_ >= 0) close(journal_fd_);
  journal_fd_ = fd;
  journal_n_ = n;
  journal_bytes_ = keep;
  return Status::Ok();
}

Status DiskJournal::Append(const TableRecord& record) {
  const std::string frame = EncodeRecordFrame(record);
  std::lock_guard<std::mutex> lock(mu_);
  const std::string path = o_.dir + "/" + JournalName(journal_n_);
  Status s = WriteAll(journal_fd_, frame, path);
  if (!s.ok()) {
    // No torn record stays behind to damage the ones after it.
    if (ftruncate(journal_fd_, static_cast<off_t>(journal_bytes_)) == 0) {
      lseek(journal_fd_, static_cast<off_t>(journal_bytes_), SEEK_SET);
    }
    return s;
  }
  journal_bytes_ += frame.size();
  dirty_ = true;
  return Status::Ok();
}

bool DiskJournal::WantsSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return journal_bytes_ >= o_.compact_bytes &&
         journal_bytes_ >= 2 * snapshot_bytes_;
}

Status DiskJournal::Compact(const std::vector<TableRecord>& snapshot) {
  uint64_t next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    next = journal_n_ + 1;
  }
  std::string bytes = kStateMagic;
  for (const TableRecord& r : snapshot) bytes += EncodeRecordFrame(r);
  bytes += EncodeSnapshotEnd(snapshot.size(), next);
  const std::string tmp = o_.dir + "/snapshot.tmp";
  const std::string fresh = o_.dir + "/" + JournalName(next);
  Status s = WriteDurably(tmp, bytes);
  if (s.ok()) s = WriteDurably(fresh, kStateMagic);
  // Until this rename the old snapshot and journal stand; after it, the
  // new snapshot and the empty journal it names.
  if (s.ok() && rename(tmp.c_str(), (o_.dir + "/snapshot").c_str()) != 0) {
    s = Failed(tmp, "cannot rename");
  }
  if (!s.ok()) {
    unlink(tmp.c_str());
    unlink(fresh.c_str());
    return s;
  }
  (void)SyncDir(o_.dir);
  uint64_t old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = journal_n_;
    snapshot_bytes_ = bytes.size();
  }
  HVD_RETURN_IF_ERROR(OpenJournal(next, std::strlen(kStateMagic)));
  unlink((o_.dir + "/" + JournalName(old)).c_str());
  return Status::Ok();
}

size_t DiskJournal::journal_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return journal_bytes_;
}

void DiskJournal::SyncLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    stop_.wait_for(lock, o_.sync_every);
    if (dirty_ && journal_fd_ >= 0) {
      dirty_ = false;
      fdatasync(journal_fd_);
    }
  }
}

DiskJournal::~DiskJournal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (syncer_.joinable()) syncer_.join();
  if (journal_fd_ >= 0) {
    fdatasync(journal_fd_);
    close(journal_fd_);
  }
  if (lock_fd_ >= 0) close(lock_fd_);
}

}  // namespace hvd::rendezvous::store
