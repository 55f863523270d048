// The job table's durability: its records, a table rebuilt from them, and
// the daemon's embedded store on disk (--state-dir).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <map>

#include "common/files.h"
#include "rendezvous/job_table.h"
#include "rendezvous/members.h"
#include "rendezvous/store/disk_journal.h"
#include "rendezvous/store/state_codec.h"
#include "rendezvous/token_hash.h"
#include "tests/util/temp_dir.h"

namespace hvd::rendezvous {
namespace {

using store::DecodeStateFile;
using store::DiskJournal;
using store::DiskJournalOptions;
using store::EncodeRecordFrame;
using store::Recovered;
using testing::TempDir;

// Keeps what the table writes, in memory.
class ListJournal : public TableJournal {
 public:
  Status Append(const TableRecord& r) override {
    records.push_back(r);
    return Status::Ok();
  }
  std::vector<TableRecord> records;
};

// A journal that is replaced by a snapshot every other record.
class CompactingJournal : public TableJournal {
 public:
  Status Append(const TableRecord& r) override {
    tail.push_back(r);
    return Status::Ok();
  }
  bool WantsSnapshot() const override { return tail.size() >= 2; }
  Status Compact(const std::vector<TableRecord>& records) override {
    snapshot = records;
    tail.clear();
    ++compactions;
    return Status::Ok();
  }
  std::vector<TableRecord> snapshot, tail;
  int compactions = 0;
};

TableRecord Key(const std::string& job, const std::string& k,
                const std::string& v) {
  return KeyRecord(job, k, v);
}

TableRecord Job(const std::string& job) {
  return JobRecord(job, HashToken("secret"), false, {{"a", 2, 0}, {"b", 1, 1}},
                   1);
}

TEST(TokenHashTest, IsSha256InHex) {
  EXPECT_EQ(HashToken("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(StateCodecTest, EveryKindOfRecordComesBackAsWritten) {
  const std::vector<TableRecord> records = {
      Job("j"),
      JoinedRecord("j", 2, 7),
      Key("j", "k", std::string("v\0w", 3)),
      MembershipRecord("j", {{"c", 3, 0}}, 4),
      BarrierRecord("j", "b", {7, 0xfedcba9876543210ull}),
      EndRecord("j")};
  std::string bytes = store::kStateMagic;
  for (const TableRecord& r : records) bytes += EncodeRecordFrame(r);
  auto f = DecodeStateFile(bytes, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->records, records);
  EXPECT_FALSE(f->torn_tail);
  EXPECT_FALSE(f->next_journal.has_value());
  EXPECT_EQ(f->good_bytes, bytes.size());
}

TEST(StateCodecTest, AFileEndingInsideAFrameIsATornTailNotDamage) {
  std::string bytes =
      std::string(store::kStateMagic) + EncodeRecordFrame(Job("j"));
  const size_t whole = bytes.size();
  bytes += EncodeRecordFrame(Key("j", "k", "v")).substr(0, 11);
  auto f = DecodeStateFile(bytes, "f");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_TRUE(f->torn_tail);
  EXPECT_EQ(f->good_bytes, whole);
  EXPECT_EQ(f->records.size(), 1u);
}

TEST(StateCodecTest, DamageIsRefusedNamingTheFileAndTheByte) {
  const std::string first =
      std::string(store::kStateMagic) + EncodeRecordFrame(Job("j"));
  std::string flipped = first + EncodeRecordFrame(Key("j", "k", "value"));
  flipped[flipped.size() - 2] ^= 0x20;
  auto f = DecodeStateFile(flipped, "DIR/journal-1");
  EXPECT_EQ(f.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(f.status().message().find("DIR/journal-1"), std::string::npos);
  EXPECT_NE(f.status().message().find("byte " + std::to_string(first.size())),
            std::string::npos)
      << f.status().message();
  EXPECT_NE(f.status().message().find("checksum"), std::string::npos);
  auto other = DecodeStateFile("{\"jobs\": []}", "f");
  EXPECT_EQ(other.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(other.status().message().find("not an hvd rendezvous state file"),
            std::string::npos);
  std::string wrong_count = first + store::EncodeSnapshotEnd(2, 1);
  EXPECT_EQ(DecodeStateFile(wrong_count, "f").status().code(),
            StatusCode::kDataLoss);
}

// What a table answers about a job, to compare a table with its rebuild.
struct Seen {
  std::vector<int> joined;
  std::string members;
  std::map<std::string, std::string> keys;
  bool operator==(const Seen&) const = default;
};
Seen Look(const JobTable& t, const std::string& job) {
  Seen s;
  s.joined = *t.JoinedRanks(job);
  s.members = *t.Get(job, kMembersKey);
  s.keys = *t.GetPrefix(job, "");
  return s;
}

TEST(TableRecordsTest, ARebuiltTableAnswersAsTheOldOneAndGoesOnFromIt) {
  ListJournal journal;
  JobTable old;
  old.SetJournal(&journal);
  auto fixed = old.CreateJob({{"a", 2}, {"b", 1}}, 3);
  auto elastic = old.CreateJob({{"a", 1}, {"b", 1}}, 2, /*elastic=*/true);
  auto ended = old.CreateJob({{"a", 1}}, 1);
  ASSERT_TRUE(fixed.ok() && elastic.ok() && ended.ok());
  ASSERT_TRUE(old.Join(fixed->job_id, "a", 0).ok());
  ASSERT_TRUE(old.Join(fixed->job_id, "a", 0, 1).ok());  // generation 2
  ASSERT_TRUE(old.Join(fixed->job_id, "b", 0).ok());
  ASSERT_TRUE(old.Join(fixed->job_id, "b", 0).ok());  // a retry: no record
  ASSERT_TRUE(old.Set(fixed->job_id, "k", "v1").ok());
  ASSERT_TRUE(old.Set(fixed->job_id, "k", "v2").ok());
  ASSERT_TRUE(old.Set(fixed->job_id, std::string(kMetricsKeyPrefix) + "a/0",
                      "telemetry")
                  .ok());
  ASSERT_TRUE(old.Join(elastic->job_id, "a", 0).ok());
  ASSERT_TRUE(old.SetMembership(elastic->job_id, {{"b", 1}, {"c", 2}}, 3).ok());
  ASSERT_TRUE(old.Join(elastic->job_id, "c", 1, 1).ok());
  ASSERT_TRUE(old.EndJob(ended->job_id, "done").ok());

  // From the journal, and from a snapshot of the table.
  for (const auto& records : {journal.records, old.SnapshotRecords()}) {
    JobTable rebuilt;
    for (const TableRecord& r : records) {
      Status s = rebuilt.Restore(r);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(rebuilt.JobCount(), 2u);
    for (const auto& id : {fixed->job_id, elastic->job_id}) {
      Seen want = Look(old, id);
      want.keys.erase(std::string(kMetricsKeyPrefix) + "a/0");
      EXPECT_EQ(Look(rebuilt, id), want) << id;
    }
    EXPECT_TRUE(rebuilt.Authenticate(fixed->job_id, fixed->token).ok());
    EXPECT_EQ(rebuilt.Authenticate(fixed->job_id, "guess").code(),
              StatusCode::kUnauthenticated);
    EXPECT_EQ(rebuilt.Authenticate(ended->job_id, ended->token).code(),
              StatusCode::kNotFound);
    // It goes on where the old one was: a's slot 0 left generation 2.
    auto next = rebuilt.Join(fixed->job_id, "a", 0, 2);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(next->generation, 3);
    auto again = rebuilt.Join(fixed->job_id, "b", 0, 1);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->generation, 2);
    EXPECT_EQ(rebuilt.Join(elastic->job_id, "c", 0, 1)->generation, 2);
  }
  // The old table's journal never saw a token, only its hash.
  for (const TableRecord& r : journal.records) {
    EXPECT_EQ(r.token_hash.find(fixed->token), std::string::npos);
  }
}

// A barrier round completes and one rank's answer is lost (the daemon
// restarted before it went out): that call, sent again with its entry to
// the rebuilt table, passes at once rather than waiting in a round nobody
// else enters; a call with a new entry starts the next round as before.
TEST(TableRecordsTest, ABarrierCallRetriedAfterARestartPassesOnce) {
  ListJournal journal;
  JobTable old;
  old.SetJournal(&journal);
  auto job = old.CreateJob({{"a", 2}}, 2);
  ASSERT_TRUE(job.ok());
  std::vector<Status> got;
  auto record = [&](Status s) { got.push_back(s); };
  const auto later = Clock::now() + std::chrono::seconds(60);
  EXPECT_NE(old.Barrier(job->job_id, "init", 0, later, record, 11), 0u);
  EXPECT_EQ(old.Barrier(job->job_id, "init", 1, later, record, 12), 0u);
  ASSERT_EQ(got.size(), 2u);
  for (const auto& records : {journal.records, old.SnapshotRecords()}) {
    JobTable rebuilt;
    for (const TableRecord& r : records) ASSERT_TRUE(rebuilt.Restore(r).ok());
    got.clear();
    // Rank 1's call again: passed. An entry of another barrier's name, or
    // a new call, enters a new round; the next round of "init" completes
    // as rounds do.
    EXPECT_EQ(rebuilt.Barrier(job->job_id, "init", 1, later, record, 12), 0u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_TRUE(got[0].ok()) << got[0].ToString();
    EXPECT_NE(rebuilt.Barrier(job->job_id, "other", 0, later, record, 11), 0u);
    EXPECT_NE(rebuilt.Barrier(job->job_id, "init", 1, later, record, 13), 0u);
    EXPECT_EQ(got.size(), 1u);
    EXPECT_EQ(rebuilt.Barrier(job->job_id, "init", 0, later, record, 14), 0u);
    ASSERT_EQ(got.size(), 3u);
    EXPECT_TRUE(got[1].ok() && got[2].ok());
    // That round is now the last: 12 no longer passes by itself.
    EXPECT_NE(rebuilt.Barrier(job->job_id, "init", 1, later, record, 12), 0u);
  }
}

// A creator's retry whose first answer was lost in a restart gets the job
// its first try made, not a second one: the creation key is the token,
// whose hash the journal keeps.
TEST(TableRecordsTest, ACreationRetriedAfterARestartMakesTheJobOnce) {
  const std::string key(64, 'k');
  ListJournal journal;
  JobTable old;
  old.SetJournal(&journal);
  auto job = old.CreateJob({{"a", 2}}, 2, false, key);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->token, key);
  for (const auto& records : {journal.records, old.SnapshotRecords()}) {
    JobTable rebuilt;
    for (const TableRecord& r : records) ASSERT_TRUE(rebuilt.Restore(r).ok());
    auto again = rebuilt.CreateJob({{"a", 2}}, 2, false, key);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(again->job_id, job->job_id);
    EXPECT_EQ(again->token, key);
    EXPECT_EQ(rebuilt.JobCount(), 1u);
    auto other = rebuilt.CreateJob({{"a", 2}}, 2, false, std::string(64, 'o'));
    ASSERT_TRUE(other.ok());
    EXPECT_NE(other->job_id, job->job_id);
  }
}

// Snapshots taken between changes lose none: the table is rebuilt from
// the last snapshot and the records after it.
TEST(TableRecordsTest, ASnapshotAndTheRecordsAfterItRebuildTheTable) {
  CompactingJournal journal;
  JobTable old;
  old.SetJournal(&journal);
  auto job = old.CreateJob({{"a", 2}}, 2);
  ASSERT_TRUE(job.ok());
  ASSERT_TRUE(old.Join(job->job_id, "a", 0).ok());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(old.Set(job->job_id, "k" + std::to_string(i), "v").ok());
  }
  ASSERT_TRUE(old.Join(job->job_id, "a", 1).ok());
  EXPECT_GE(journal.compactions, 3);
  JobTable rebuilt;
  for (const auto* part : {&journal.snapshot, &journal.tail}) {
    for (const TableRecord& r : *part) ASSERT_TRUE(rebuilt.Restore(r).ok());
  }
  EXPECT_EQ(Look(rebuilt, job->job_id), Look(old, job->job_id));
}

TEST(TableRecordsTest, ARecordForAJobNeverCreatedIsRefused) {
  JobTable t;
  Status s = t.Restore(Key("nobody", "k", "v"));
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  ASSERT_TRUE(t.Restore(Job("j")).ok());
  EXPECT_EQ(t.Restore(Job("j")).code(), StatusCode::kDataLoss);
}

class FailingJournal : public TableJournal {
 public:
  Status Append(const TableRecord&) override {
    return Status::Unavailable("state", "disk full");
  }
};

TEST(TableRecordsTest, AChangeTheJournalRefusesIsNotMade) {
  JobTable t;
  auto job = t.CreateJob({{"a", 1}}, 1);
  ASSERT_TRUE(job.ok());
  FailingJournal full;
  t.SetJournal(&full);
  EXPECT_EQ(t.Set(job->job_id, "k", "v").code(), StatusCode::kUnavailable);
  EXPECT_EQ(t.Get(job->job_id, "k").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(t.Join(job->job_id, "a", 0).ok());
  EXPECT_TRUE(t.JoinedRanks(job->job_id)->empty());
  EXPECT_FALSE(t.CreateJob({{"a", 1}}, 1).ok());
  EXPECT_EQ(t.JobCount(), 1u);
}

Recovered OpenAndRead(const DiskJournalOptions& o,
                      std::unique_ptr<DiskJournal>* out) {
  Recovered r;
  auto j = DiskJournal::Open(o, &r);
  EXPECT_TRUE(j.ok()) << j.status().ToString();
  if (j.ok()) *out = std::move(*j);
  return r;
}

TEST(DiskJournalTest, RecordsComeBackAfterAReopenAndAfterCompaction) {
  TempDir dir;
  DiskJournalOptions o;
  o.dir = dir.path() + "/state";
  o.compact_bytes = 300;
  std::vector<TableRecord> want = {Job("j")};
  {
    std::unique_ptr<DiskJournal> j;
    EXPECT_TRUE(OpenAndRead(o, &j).records.empty());
    struct stat st;
    ASSERT_EQ(stat(o.dir.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_TRUE(j->Append(want[0]).ok());
    for (int i = 0; i < 10; ++i) {
      want.push_back(Key("j", "k" + std::to_string(i), std::string(40, 'x')));
      ASSERT_TRUE(j->Append(want.back()).ok());
    }
    EXPECT_TRUE(j->WantsSnapshot());
    // The snapshot holds what the table holds; the journal starts anew.
    ASSERT_TRUE(j->Compact(want).ok());
    EXPECT_FALSE(j->WantsSnapshot());
    want.push_back(Key("j", "after", "the snapshot"));
    ASSERT_TRUE(j->Append(want.back()).ok());
  }
  std::unique_ptr<DiskJournal> j;
  Recovered r = OpenAndRead(o, &j);
  EXPECT_EQ(r.records, want);
  EXPECT_TRUE(r.notes.empty());
  EXPECT_TRUE(ReadWholeFile(o.dir + "/journal-2").ok());
  EXPECT_FALSE(ReadWholeFile(o.dir + "/journal-1").ok());
}

TEST(DiskJournalTest, OneDaemonPerStateDirectory) {
  TempDir dir;
  DiskJournalOptions o;
  o.dir = dir.path();
  std::unique_ptr<DiskJournal> first;
  OpenAndRead(o, &first);
  Recovered r;
  auto second = DiskJournal::Open(o, &r);
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by another"),
            std::string::npos);
}

// Opens the journal in o.dir, appends `records` and closes it.
void Journal(const DiskJournalOptions& o,
             const std::vector<TableRecord>& records) {
  std::unique_ptr<DiskJournal> j;
  OpenAndRead(o, &j);
  ASSERT_TRUE(j);
  for (const TableRecord& r : records) ASSERT_TRUE(j->Append(r).ok());
}

void AppendBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::app | std::ios::binary) << bytes;
}

TEST(DiskJournalTest, ATornLastRecordIsDroppedWithANote) {
  TempDir dir;
  DiskJournalOptions o;
  o.dir = dir.path();
  Journal(o, {Job("j")});
  AppendBytes(o.dir + "/journal-1",
              EncodeRecordFrame(Key("j", "k", "v")).substr(0, 9));
  {
    std::unique_ptr<DiskJournal> j;
    Recovered r = OpenAndRead(o, &j);
    EXPECT_EQ(r.records, std::vector<TableRecord>{Job("j")});
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("ends inside a record"), std::string::npos);
    // Records after the cut are read again.
    ASSERT_TRUE(j->Append(Key("j", "k", "v")).ok());
  }
  std::unique_ptr<DiskJournal> j;
  Recovered r = OpenAndRead(o, &j);
  EXPECT_EQ(r.records,
            (std::vector<TableRecord>{Job("j"), Key("j", "k", "v")}));
  EXPECT_TRUE(r.notes.empty());
}

TEST(DiskJournalTest, DamageRefusesToStartUnlessToldToStartEmpty) {
  TempDir dir;
  DiskJournalOptions o;
  o.dir = dir.path();
  Journal(o, {Job("j"), Key("j", "k", "v")});
  const std::string path = o.dir + "/journal-1";
  std::string bytes = *ReadWholeFile(path);
  bytes[std::strlen(store::kStateMagic) + 12] ^= 1;
  std::ofstream(path, std::ios::trunc | std::ios::binary) << bytes;
  Recovered r;
  auto refused = DiskJournal::Open(o, &r);
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("journal-1: damaged at byte"),
            std::string::npos)
      << refused.status().message();
  EXPECT_NE(refused.status().message().find("--discard-damaged-state"),
            std::string::npos);
  o.discard_damaged = true;
  std::unique_ptr<DiskJournal> j;
  Recovered empty = OpenAndRead(o, &j);
  EXPECT_TRUE(empty.records.empty());
  ASSERT_EQ(empty.notes.size(), 1u);
  EXPECT_NE(empty.notes[0].find("moved to"), std::string::npos);
  // Kept aside, not lost.
  const std::string aside =
      empty.notes[0].substr(empty.notes[0].find("moved to ") + 9,
                            empty.notes[0].find(" and starting") -
                                empty.notes[0].find("moved to ") - 9);
  EXPECT_EQ(*ReadWholeFile(aside + "/journal-1"), bytes);
}

TEST(DiskJournalTest, ATruncatedSnapshotIsRefused) {
  TempDir dir;
  DiskJournalOptions o;
  o.dir = dir.path();
  {
    std::unique_ptr<DiskJournal> j;
    OpenAndRead(o, &j);
    ASSERT_TRUE(j->Compact({Job("j"), Key("j", "k", "v")}).ok());
  }
  const std::string path = o.dir + "/snapshot";
  std::string bytes = *ReadWholeFile(path);
  std::ofstream(path, std::ios::trunc | std::ios::binary)
      << bytes.substr(0, bytes.size() - 3);
  Recovered r;
  auto refused = DiskJournal::Open(o, &r);
  EXPECT_EQ(refused.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(refused.status().message().find("truncated"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace hvd::rendezvous
