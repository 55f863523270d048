#include "rendezvous/store/etcd_journal.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>

#include "common/logging.h"
#include "rendezvous/backoff.h"
#include "rendezvous/store/state_codec.h"

namespace hvd::rendezvous::store {
namespace {

using SteadyClock = std::chrono::steady_clock;

// etcd refuses requests over 1.5 MiB by default: batches and snapshot
// chunks stay well under it.
constexpr size_t kValueBytes = size_t{1} << 20;

EtcdOp Put(std::string key, std::string value, int64_t lease = 0) {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kPut;
  op.key = std::move(key);
  op.value = std::move(value);
  op.lease = lease;
  return op;
}

EtcdOp DeleteRange(std::string from, std::string to) {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kDelete;
  op.key = std::move(from);
  op.range_end = std::move(to);
  return op;
}

EtcdOp Get(std::string key) {
  EtcdOp op;
  op.kind = EtcdOp::Kind::kGet;
  op.key = std::move(key);
  return op;
}

EtcdCompare Revision(EtcdCompare::Target target, std::string key,
                     int64_t revision) {
  EtcdCompare c;
  c.target = target;
  c.key = std::move(key);
  c.revision = revision;
  return c;
}

std::string Seq(uint64_t n) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%020" PRIu64, n);
  return buf;
}

// A value of records: the state files' magic line and frames.
StatusOr<std::vector<TableRecord>> DecodeValue(const EtcdKv& kv) {
  HVD_ASSIGN_OR_RETURN(DecodedFile f, DecodeStateFile(kv.value, kv.key));
  if (f.torn_tail || f.next_journal) {
    return Status::DataLoss(kv.key, "holds a cut or misplaced record");
  }
  return std::move(f.records);
}

}  // namespace

EtcdJournal::EtcdJournal(std::unique_ptr<EtcdClient> client,
                         EtcdJournalOptions options, EtcdJournalHooks hooks)
    : client_(std::move(client)),
      o_(std::move(options)),
      hooks_(std::move(hooks)) {}

std::string EtcdJournal::Key(const std::string& suffix) const {
  return o_.prefix + suffix;
}

std::string EtcdJournal::LogKey(uint64_t seq) const {
  return Key("log/" + Seq(seq));
}

StatusOr<std::unique_ptr<EtcdJournal>> EtcdJournal::Open(
    std::unique_ptr<EtcdClient> client, const EtcdJournalOptions& options,
    EtcdJournalHooks hooks, Recovered* recovered) {
  std::unique_ptr<EtcdJournal> j(
      new EtcdJournal(std::move(client), options, std::move(hooks)));
  HVD_RETURN_IF_ERROR(j->Acquire());
  j->keeper_ = std::thread([raw = j.get()] { raw->KeepAliveLoop(); });
  Status s = j->Load(recovered);
  if (s.code() == StatusCode::kDataLoss && options.discard_damaged) {
    const std::string aside =
        options.prefix + "damaged-" + std::to_string(std::time(nullptr)) + "/";
    HVD_RETURN_IF_ERROR(j->SetAside(aside));
    *recovered = Recovered{};
    recovered->notes.push_back(s.message() + "; moved under " + aside +
                               " and starting empty (--discard-damaged-state)");
    s = j->Load(recovered);
  }
  if (s.code() == StatusCode::kDataLoss) {
    return Status::DataLoss(
        s.message(),
        "the daemon will not start on it: restore etcd from a backup, or "
        "start with --discard-damaged-state to keep the records aside and "
        "begin empty");
  }
  HVD_RETURN_IF_ERROR(s);
  j->committer_ = std::thread([raw = j.get()] { raw->CommitLoop(); });
  return j;
}

Status EtcdJournal::Acquire() {
  const std::string owner = Key("owner");
  bool said = false;
  for (;;) {
    // A fresh lease for each try: a standby may wait far longer than a
    // lease lives.
    HVD_ASSIGN_OR_RETURN(lease_, client_->GrantLease(o_.lease_seconds));
    HVD_ASSIGN_OR_RETURN(
        EtcdTxnResult r,
        client_->Txn({Revision(EtcdCompare::Target::kCreateRevision, owner, 0)},
                     {Put(owner, o_.name, lease_)}, {Get(owner)}));
    if (r.succeeded) {
      owner_revision_ = r.revision;
      return Status::Ok();
    }
    if (!r.gets.empty() && r.gets[0] && hooks_.owner_gone &&
        hooks_.owner_gone(r.gets[0]->value)) {
      // Its process is gone (killed, and this is its restart): the key
      // changes hands only if nobody else took it meanwhile.
      HVD_ASSIGN_OR_RETURN(
          EtcdTxnResult took,
          client_->Txn({Revision(EtcdCompare::Target::kModRevision, owner,
                                 r.gets[0]->mod_revision)},
                       {Put(owner, o_.name, lease_)}, {}));
      if (took.succeeded) {
        HVD_LOG(Warning) << "took the jobs under etcd prefix '" << o_.prefix
                         << "' over from " << r.gets[0]->value
                         << ", which no longer runs";
        owner_revision_ = took.revision;
        return Status::Ok();
      }
    }
    (void)client_->RevokeLease(lease_);
    lease_ = 0;
    if (r.gets.empty() || !r.gets[0]) continue;  // gone meanwhile
    if (!said && hooks_.waiting) {
      hooks_.waiting("the jobs under etcd prefix '" + o_.prefix +
                     "' are served by " + r.gets[0]->value +
                     "; standing by to take over when it stops");
      said = true;
    }
    client_->WatchForDelete(owner, r.gets[0]->mod_revision,
                            SteadyClock::now() + std::chrono::seconds(1));
    if (hooks_.stop_waiting && hooks_.stop_waiting()) {
      return Status::Cancelled("etcd prefix '" + o_.prefix + "'",
                               "stopped while standing by");
    }
  }
}

Status EtcdJournal::Load(Recovered* recovered) {
  HVD_ASSIGN_OR_RETURN(std::optional<EtcdKv> pointer,
                       client_->Get(Key("snapshot")));
  if (pointer) {
    unsigned long long gen = 0, chunks = 0;
    if (std::sscanf(pointer->value.c_str(), "%llu %llu", &gen, &chunks) != 2 ||
        gen == 0) {
      return Status::DataLoss(pointer->key, "is not 'GEN CHUNKS'");
    }
    HVD_ASSIGN_OR_RETURN(std::vector<EtcdKv> parts,
                         client_->List(Key("snap/" + Seq(gen) + "/")));
    if (parts.size() != chunks) {
      return Status::DataLoss(pointer->key, "names " + std::to_string(chunks) +
                                                " chunks, and etcd holds " +
                                                std::to_string(parts.size()));
    }
    for (const EtcdKv& kv : parts) {
      HVD_ASSIGN_OR_RETURN(std::vector<TableRecord> rs, DecodeValue(kv));
      for (TableRecord& r : rs) recovered->records.push_back(std::move(r));
      snapshot_bytes_ += kv.value.size();
    }
    snapshot_gen_ = gen;
    next_seq_ = gen;
  }
  HVD_ASSIGN_OR_RETURN(std::vector<EtcdKv> log, client_->List(Key("log/")));
  for (const EtcdKv& kv : log) {
    const std::string seq = kv.key.substr(Key("log/").size());
    if (seq != Seq(next_seq_)) {
      return Status::DataLoss(
          kv.key, "breaks the log: expected " + LogKey(next_seq_) + " next");
    }
    HVD_ASSIGN_OR_RETURN(std::vector<TableRecord> rs, DecodeValue(kv));
    for (TableRecord& r : rs) recovered->records.push_back(std::move(r));
    log_bytes_ += kv.value.size();
    ++next_seq_;
  }
  return Status::Ok();
}

Status EtcdJournal::SetAside(const std::string& to) {
  std::vector<EtcdKv> all;
  for (const char* part : {"snapshot", "snap/", "log/"}) {
    HVD_ASSIGN_OR_RETURN(std::vector<EtcdKv> kvs, client_->List(Key(part)));
    for (EtcdKv& kv : kvs) all.push_back(std::move(kv));
  }
  // Moved in transactions under etcd's limits (128 operations, 1.5 MiB).
  std::vector<EtcdOp> ops;
  size_t bytes = 0;
  for (size_t i = 0; i <= all.size(); ++i) {
    const bool last = i == all.size();
    if (!ops.empty() && (last || ops.size() >= 100 ||
                         bytes + all[i].value.size() > kValueBytes)) {
      HVD_RETURN_IF_ERROR(Fenced(ops, "set damaged records aside"));
      ops.clear();
      bytes = 0;
    }
    if (last) break;
    const EtcdKv& kv = all[i];
    ops.push_back(Put(to + kv.key.substr(o_.prefix.size()), kv.value));
    ops.push_back(DeleteRange(kv.key, ""));
    bytes += kv.value.size();
  }
  std::lock_guard<std::mutex> lock(mu_);
  next_seq_ = 1;
  snapshot_gen_ = 0;
  snapshot_bytes_ = log_bytes_ = 0;
  return Status::Ok();
}

Status EtcdJournal::Append(const TableRecord& record) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lost_.ok()) return lost_;
  pending_.push_back(EncodeRecordFrame(record));
  ++appended_;
  changed_.notify_all();
  return Status::Ok();
}

void EtcdJournal::WhenDurable(std::function<void(const Status&)> then) {
  Status now;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lost_.ok() && durable_ < appended_) {
      waiters_.push_back(Waiter{appended_, std::move(then)});
      return;
    }
    now = lost_;
  }
  then(now);
}

void EtcdJournal::Abandon(const Status& why) {
  std::vector<Waiter> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    abandoned_ = true;
    left.swap(waiters_);
  }
  if (!left.empty()) {
    HVD_LOG(Warning) << "stopping with " << left.size()
                     << " answers still waiting for etcd to take their "
                        "changes; their callers retry";
  }
  for (Waiter& w : left) w.then(why);
}

void EtcdJournal::CommitLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    changed_.wait(
        lock, [&] { return stopping_ || !lost_.ok() || !pending_.empty(); });
    if (!lost_.ok() || pending_.empty()) return;  // stopping, all written
    std::string value = kStateMagic;
    size_t n = 0;
    while (n < pending_.size() &&
           (n == 0 || value.size() + pending_[n].size() <= kValueBytes)) {
      value += pending_[n++];
    }
    const uint64_t seq = next_seq_;
    lock.unlock();
    const Status s = CommitBatch(seq, value);
    lock.lock();
    if (!s.ok()) {
      // Abandoned at shutdown: nobody was told of these changes, and the
      // daemon is stopping anyway.
      if (abandoned_) return;
      lock.unlock();
      Lose(s);
      return;
    }
    pending_.erase(pending_.begin(), pending_.begin() + n);
    ++next_seq_;
    ++batches_;
    durable_ += n;
    log_bytes_ += value.size();
    size_t done = 0;
    while (done < waiters_.size() && waiters_[done].mark <= durable_) ++done;
    std::vector<Waiter> ready(std::make_move_iterator(waiters_.begin()),
                              std::make_move_iterator(waiters_.begin() + done));
    waiters_.erase(waiters_.begin(), waiters_.begin() + done);
    changed_.notify_all();
    lock.unlock();
    for (Waiter& w : ready) w.then(Status::Ok());
    lock.lock();
  }
}

Status EtcdJournal::CommitBatch(uint64_t seq, const std::string& value) {
  const std::string key = LogKey(seq);
  const std::string owner = Key("owner");
  const auto until = SteadyClock::now() + o_.commit_timeout;
  Backoff backoff(BackoffSeed(), std::chrono::milliseconds(50),
                  std::chrono::seconds(1));
  for (;;) {
    auto r = client_->Txn(
        {Revision(EtcdCompare::Target::kModRevision, owner, owner_revision_),
         Revision(EtcdCompare::Target::kCreateRevision, key, 0)},
        {Put(key, value)}, {Get(owner), Get(key)});
    if (r.ok() && r->succeeded) return Status::Ok();
    if (r.ok()) {
      // A try whose answer was lost may have written it already.
      if (r->gets.size() == 2 && r->gets[1] && r->gets[1]->value == value) {
        return Status::Ok();
      }
      return Status::FailedPrecondition(
          "etcd prefix '" + o_.prefix + "'",
          "another daemon took the jobs over (this one's lease ran out)");
    }
    bool abandoned;
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandoned = abandoned_;
    }
    if (abandoned || SteadyClock::now() >= until) {
      return Status::Unavailable(
          "etcd prefix '" + o_.prefix + "'",
          (abandoned
               ? std::string("no batch could be written before the "
                             "daemon stopped")
               : "no batch could be written for " +
                     std::to_string(o_.commit_timeout.count() / 1000) + " s") +
              ": " + r.status().message());
    }
    std::this_thread::sleep_for(backoff.Next());
  }
}

void EtcdJournal::KeepAliveLoop() {
  const auto every = std::chrono::milliseconds(o_.lease_seconds * 1000 / 3);
  std::unique_lock<std::mutex> lock(mu_);
  auto renewed = SteadyClock::now();
  for (;;) {
    ending_.wait_for(lock, every, [&] { return stopping_ || !lost_.ok(); });
    if (stopping_ || !lost_.ok()) return;
    lock.unlock();
    const Status s = client_->KeepAlive(lease_);
    const auto now = SteadyClock::now();
    if (s.ok()) {
      renewed = now;
    } else if (s.code() == StatusCode::kNotFound ||
               now - renewed > std::chrono::seconds(o_.lease_seconds)) {
      Lose(Status::Unavailable(
          "etcd prefix '" + o_.prefix + "'",
          "this daemon's lease ran out (" + s.message() + ")"));
      return;
    }
    lock.lock();
  }
}

void EtcdJournal::Lose(const Status& why) {
  std::vector<Waiter> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!lost_.ok()) return;
    lost_ = Status::Unavailable("the rendezvous gave its jobs up: " +
                                why.message());
    failed.swap(waiters_);
    changed_.notify_all();
    ending_.notify_all();
  }
  for (Waiter& w : failed) w.then(lost_);
  if (hooks_.lost) hooks_.lost(lost_);
}

bool EtcdJournal::WantsSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return log_bytes_ >= o_.compact_bytes && log_bytes_ >= 2 * snapshot_bytes_;
}

Status EtcdJournal::Fenced(const std::vector<EtcdOp>& ops,
                           const std::string& what) {
  HVD_ASSIGN_OR_RETURN(EtcdTxnResult r,
                       client_->Txn({Revision(EtcdCompare::Target::kModRevision,
                                              Key("owner"), owner_revision_)},
                                    ops, {}));
  if (!r.succeeded) {
    return Status::FailedPrecondition(
        what, "another daemon took the jobs over (this one's lease ran out)");
  }
  return Status::Ok();
}

Status EtcdJournal::Compact(const std::vector<TableRecord>& snapshot) {
  uint64_t gen;
  {
    // Every record so far goes in the snapshot, so the log it replaces
    // must be whole first.
    std::unique_lock<std::mutex> lock(mu_);
    changed_.wait(lock, [&] { return pending_.empty() || !lost_.ok(); });
    if (!lost_.ok()) return lost_;
    gen = next_seq_;
  }
  const std::string dir = Key("snap/" + Seq(gen) + "/");
  std::vector<std::string> chunks;
  std::string value = kStateMagic;
  for (const TableRecord& r : snapshot) {
    std::string frame = EncodeRecordFrame(r);
    if (value.size() > std::strlen(kStateMagic) &&
        value.size() + frame.size() > kValueBytes) {
      chunks.push_back(std::move(value));
      value = kStateMagic;
    }
    value += frame;
  }
  chunks.push_back(std::move(value));
  // Chunks an earlier try left under the same GEN (it died before the
  // switch) go first: etcd refuses a put inside a range the same
  // transaction deletes.
  HVD_RETURN_IF_ERROR(Fenced({DeleteRange(dir, EtcdClient::PrefixEnd(dir))},
                             "write a snapshot"));
  size_t bytes = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    bytes += chunks[i].size();
    HVD_RETURN_IF_ERROR(
        Fenced({Put(dir + Seq(i), std::move(chunks[i]))}, "write a snapshot"));
  }
  // One transaction switches to the snapshot and drops what it replaces.
  HVD_RETURN_IF_ERROR(
      Fenced({Put(Key("snapshot"),
                  std::to_string(gen) + " " + std::to_string(chunks.size())),
              DeleteRange(Key("log/"), LogKey(gen)),
              DeleteRange(Key("snap/"), Key("snap/" + Seq(gen)))},
             "switch to a snapshot"));
  std::lock_guard<std::mutex> lock(mu_);
  snapshot_gen_ = gen;
  snapshot_bytes_ = bytes;
  log_bytes_ = 0;
  return Status::Ok();
}

uint64_t EtcdJournal::batches() const {
  std::lock_guard<std::mutex> lock(mu_);
  return batches_;
}

EtcdJournal::~EtcdJournal() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    changed_.notify_all();
    ending_.notify_all();
  }
  if (committer_.joinable()) committer_.join();
  if (keeper_.joinable()) keeper_.join();
  // A standby takes over at once, not when the lease would run out; not
  // tried when the stop abandoned writes etcd did not take (it would wait
  // out its own timeout too).
  if (lease_ != 0 && !abandoned_) (void)client_->RevokeLease(lease_);
}

}  // namespace hvd::rendezvous::store
