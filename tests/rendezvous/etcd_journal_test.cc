// The etcd store's journal against a real etcd member: records read back
// in order across batches and snapshots, concurrent changes sharing
// writes, a second daemon standing by, and a daemon that lost the prefix
// refused every further write.
#include "rendezvous/store/etcd_journal.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "tests/rendezvous/etcd_fixture.h"

namespace hvd::testing {
namespace {

using rendezvous::KeyRecord;
using rendezvous::TableRecord;
using rendezvous::store::EtcdClient;
using rendezvous::store::EtcdJournal;
using rendezvous::store::EtcdJournalHooks;
using rendezvous::store::EtcdJournalOptions;
using rendezvous::store::EtcdOptions;
using rendezvous::store::Recovered;
using std::chrono::seconds;

class EtcdJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveEtcd()) {
      GTEST_SKIP() << "no etcd: packaging/install-deps.sh installs "
                      "etcd-server and etcd-client";
    }
    etcd_ = std::make_unique<EtcdCluster>(dir_, 1);
    ASSERT_TRUE(etcd_->serving(0)) << etcd_->member(0).process->StderrSoFar();
  }

  std::unique_ptr<EtcdClient> Client() {
    EtcdOptions o;
    o.endpoints = {etcd_->member(0).client};
    auto c = EtcdClient::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(*c) : nullptr;
  }

  StatusOr<std::unique_ptr<EtcdJournal>> Open(const std::string& name,
                                              Recovered* recovered,
                                              EtcdJournalHooks hooks = {}) {
    options_.name = name;
    options_.lease_seconds = 2;
    return EtcdJournal::Open(Client(), options_, std::move(hooks), recovered);
  }

  // Appends and waits until durable, as the table and server would.
  static Status AppendDurably(EtcdJournal& j, const TableRecord& r) {
    HVD_RETURN_IF_ERROR(j.Append(r));
    std::promise<Status> done;
    j.WhenDurable([&](const Status& s) { done.set_value(s); });
    return done.get_future().get();
  }

  TempDir dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  EtcdJournalOptions options_;
};

TEST_F(EtcdJournalTest, RecordsComeBackInOrderAndConcurrentOnesShareWrites) {
  Recovered none;
  auto j = Open("first", &none);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  EXPECT_TRUE(none.records.empty());
  // 8 writers of 100 records each, every one waiting for its own.
  std::vector<std::thread> writers;
  std::atomic<int> failed{0};
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 100; ++i) {
        TableRecord r =
            KeyRecord("job", "w" + std::to_string(w), std::to_string(i));
        if (!AppendDurably(**j, r).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(failed, 0);
  // How many writes the 800 took depends on timing: only reported.
  RecordProperty("batches", static_cast<int>((*j)->batches()));
  j->reset();  // gives the prefix up

  Recovered back;
  auto again = Open("second", &back);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(back.records.size(), 800u);
  // Each writer's records in its own order.
  std::map<std::string, int> next;
  for (const TableRecord& r : back.records) {
    EXPECT_EQ(r.value, std::to_string(next[r.key]++)) << r.key;
  }
}

TEST_F(EtcdJournalTest, ASnapshotReplacesTheLogAndReadsBack) {
  options_.compact_bytes = 2048;  // a snapshot every few batches
  Recovered none;
  auto j = Open("first", &none);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  std::map<std::string, std::string> table;  // what a table would hold
  for (int i = 0; i < 300; ++i) {
    const std::string key = "k" + std::to_string(i % 37);
    const std::string value(40, static_cast<char>('a' + i % 26));
    // As the table does: the snapshot before the record, of the table
    // without its change.
    if ((*j)->WantsSnapshot()) {
      std::vector<TableRecord> snapshot;
      for (const auto& [k, v] : table)
        snapshot.push_back(KeyRecord("job", k, v));
      ASSERT_TRUE((*j)->Compact(snapshot).ok());
    }
    table[key] = value;
    ASSERT_TRUE(AppendDurably(**j, KeyRecord("job", key, value)).ok());
  }
  j->reset();
  Result log =
      etcd_->Ctl({"get", "--prefix", "--keys-only", "/hvd-rendezvous/log/"});
  size_t keys = 0;
  for (size_t at = 0; (at = log.out.find("/log/", at)) != std::string::npos;
       ++at) {
    ++keys;
  }
  EXPECT_LT(keys, 100u) << "the log was never replaced";

  Recovered back;
  auto again = Open("second", &back);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  std::map<std::string, std::string> rebuilt;
  for (const TableRecord& r : back.records) rebuilt[r.key] = r.value;
  EXPECT_EQ(rebuilt, table);
}

TEST_F(EtcdJournalTest, ASecondDaemonStandsByUntilTheFirstGivesUp) {
  Recovered none;
  auto first = Open("first", &none);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(AppendDurably(**first, KeyRecord("job", "a", "1")).ok());
  std::promise<std::string> said;
  EtcdJournalHooks hooks;
  hooks.waiting = [&](const std::string& what) { said.set_value(what); };
  Recovered second_got;
  auto second = std::async(std::launch::async,
                           [&] { return Open("second", &second_got, hooks); });
  const std::string what = said.get_future().get();
  EXPECT_NE(what.find("served by first"), std::string::npos) << what;
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(500)),
            std::future_status::timeout);
  first->reset();  // revokes its lease: the standby takes over at once
  ASSERT_EQ(second.wait_for(seconds(30)), std::future_status::ready);
  auto j = second.get();
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_EQ(second_got.records.size(), 1u);
  EXPECT_EQ(second_got.records[0].value, "1");
}

// Another daemon took the prefix (here: its owner key rewritten): the
// first one's next batch fails its fence, so its waiters hear the error,
// it says it lost the jobs, and it refuses every change after.
TEST_F(EtcdJournalTest, ADaemonThatLostThePrefixWritesNothingMore) {
  std::promise<Status> lost;
  EtcdJournalHooks hooks;
  hooks.lost = [&](const Status& s) { lost.set_value(s); };
  Recovered none;
  auto j = Open("first", &none, hooks);
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  ASSERT_TRUE(AppendDurably(**j, KeyRecord("job", "a", "1")).ok());
  ASSERT_EQ(etcd_->Ctl({"put", "/hvd-rendezvous/owner", "usurper"}).exit_code,
            0);
  Status late = AppendDurably(**j, KeyRecord("job", "a", "2"));
  EXPECT_EQ(late.code(), StatusCode::kUnavailable) << late.ToString();
  Status why = lost.get_future().get();
  EXPECT_NE(why.message().find("another daemon took the jobs over"),
            std::string::npos)
      << why.ToString();
  EXPECT_EQ((*j)->Append(KeyRecord("job", "a", "3")).code(),
            StatusCode::kUnavailable);
  j->reset();
  // What etcd holds: the first record only.
  ASSERT_EQ(etcd_->Ctl({"del", "/hvd-rendezvous/owner"}).exit_code, 0);
  Recovered back;
  auto again = Open("third", &back);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(back.records.size(), 1u);
  EXPECT_EQ(back.records[0].value, "1");
}

}  // namespace
}  // namespace hvd::testing
