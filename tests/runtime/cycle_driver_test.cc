// The cycle driver alone, on a fake engine and a fake control plane: who
// takes the turns (the engine thread or a waiting caller), when a caller
// leaves them to the engine thread, and how paced cycles are spaced.
#include "runtime/engine/cycle_driver.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace hvd::runtime {
namespace {

using Turn = CycleDriver::Turn;

class FakeControl final : public ControlPlane {
 public:
  explicit FakeControl(bool drivable) : drivable_(drivable) {}
  Status Exchange(const std::string&, std::vector<std::string>*,
                  bool) override {
    return Status::Ok();
  }
  void Wait(std::chrono::milliseconds, bool* peer) override {
    ++waits;
    *peer = false;
  }
  void Notify() override { ++notifies; }
  bool Drivable() const override { return drivable_; }
  void SetDriving(bool on) override { driving.push_back(on); }

  int waits = 0, notifies = 0;
  std::vector<bool> driving;

 private:
  bool drivable_;
};

// An engine with `due` cycles' worth of work; its turns answer as
// `answers` says (then kRan), and record who took them.
class FakeCycles final : public CycleDriver::Cycles {
 public:
  bool Due() override { return due > 0; }
  bool HasPending() override { return pending; }
  size_t Fresh() override { return 0; }
  bool Stopping() override { return stopping; }
  Turn TakeTurn(bool, bool driver) override {
    takers.push_back(std::this_thread::get_id());
    by_driver.push_back(driver);
    if (due > 0) --due;
    if (answers.empty()) return Turn::kRan;
    Turn t = answers.front();
    answers.erase(answers.begin());
    return t;
  }

  int due = 0;
  bool pending = false, stopping = false;
  std::vector<Turn> answers;
  std::vector<std::thread::id> takers;
  std::vector<bool> by_driver;
};

TEST(CycleDriverTest, TheEngineThreadTakesTurnsUntilTheCyclesEnd) {
  FakeCycles cycles;
  cycles.due = 5;
  cycles.answers = {Turn::kRan, Turn::kIdle, Turn::kEnded};
  FakeControl control(/*drivable=*/false);
  CycleDriver driver(cycles, control, std::chrono::microseconds(0));
  driver.Loop();  // returns: the third turn ended the cycles
  EXPECT_EQ(cycles.takers.size(), 3u);
  EXPECT_EQ(cycles.by_driver, (std::vector<bool>{false, false, false}));
  EXPECT_EQ(driver.cycles_by_callers(), 0u);
  // Once ended, a caller takes no turn either.
  driver.Drive([] { return false; }, /*notified=*/true);
  EXPECT_EQ(cycles.takers.size(), 3u);
}

TEST(CycleDriverTest, AWaitingCallerTakesTheTurnsItself) {
  FakeCycles cycles;
  cycles.due = 2;
  FakeControl control(/*drivable=*/true);
  CycleDriver driver(cycles, control, std::chrono::microseconds(0));
  driver.Drive([&] { return cycles.due == 0; }, /*notified=*/false);
  ASSERT_EQ(cycles.takers.size(), 2u);
  for (auto id : cycles.takers) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(cycles.by_driver, (std::vector<bool>{true, true}));
  EXPECT_EQ(driver.cycles_by_callers(), 2u);
  EXPECT_EQ(control.driving, (std::vector<bool>{true, false}));
  EXPECT_EQ(control.notifies, 0);  // nothing left for the engine thread
}

TEST(CycleDriverTest, WorkLeftIsOwedToTheEngineThread) {
  FakeCycles cycles;
  cycles.due = 1;
  cycles.pending = true;  // another request still waits
  FakeControl control(/*drivable=*/true);
  CycleDriver driver(cycles, control, std::chrono::microseconds(0));
  driver.Drive([&] { return cycles.due == 0; }, /*notified=*/true);
  EXPECT_EQ(cycles.takers.size(), 1u);
  EXPECT_EQ(control.notifies, 1);
}

TEST(CycleDriverTest, AHandOffLeavesTheTurnsAndCountsNoCycle) {
  FakeCycles cycles;
  cycles.due = 3;
  cycles.answers = {Turn::kHandOff};
  FakeControl control(/*drivable=*/true);
  CycleDriver driver(cycles, control, std::chrono::microseconds(0));
  driver.Drive([] { return false; }, /*notified=*/true);
  EXPECT_EQ(cycles.takers.size(), 1u);
  EXPECT_EQ(driver.cycles_by_callers(), 0u);
  EXPECT_EQ(control.driving, (std::vector<bool>{true, false}));
}

// The fast lane's turn: under the cycle lock, without the driving flag (a
// ring meanwhile wakes the engine thread as usual); it owes the engine
// thread what is left unless its caller goes on to drive.
TEST(CycleDriverTest, ATurnOfItsOwnLeavesTheDrivingFlagAlone) {
  for (bool pending : {false, true}) {
    for (bool then_drives : {false, true}) {
      FakeCycles cycles;
      cycles.pending = pending;
      FakeControl control(/*drivable=*/true);
      CycleDriver driver(cycles, control, std::chrono::microseconds(0));
      int turns = 0;
      EXPECT_TRUE(driver.TryTurn(
          [&] {
            ++turns;
            return Turn::kRan;
          },
          &then_drives));
      EXPECT_EQ(turns, 1);
      EXPECT_TRUE(control.driving.empty());
      EXPECT_EQ(control.notifies, pending && !then_drives ? 1 : 0)
          << "pending " << pending << ", then drives " << then_drives;
      EXPECT_EQ(driver.cycles_by_callers(), 1u);
    }
  }
  // Paced cycles and planes callers cannot drive: no turn.
  for (bool drivable : {false, true}) {
    FakeCycles cycles;
    FakeControl control(drivable);
    CycleDriver driver(cycles, control,
                       std::chrono::microseconds(drivable ? 5000 : 0));
    const bool then_drives = false;
    EXPECT_FALSE(driver.TryTurn([] { return Turn::kRan; }, &then_drives));
  }
}

// Paced cycles and planes that cannot tell whether a peer waits stay with
// the engine thread: the caller wakes it unless queuing did.
TEST(CycleDriverTest, CallersLeavePacedCyclesAndBlindPlanesToTheThread) {
  for (bool drivable : {false, true}) {
    for (bool notified : {false, true}) {
      FakeCycles cycles;
      cycles.due = 1;
      FakeControl control(drivable);
      CycleDriver driver(cycles, control,
                         std::chrono::microseconds(drivable ? 5000 : 0));
      driver.Drive([] { return false; }, notified);
      EXPECT_TRUE(cycles.takers.empty());
      EXPECT_EQ(control.notifies, notified ? 0 : 1);
    }
  }
}

TEST(CycleDriverTest, PacedCyclesStartTheCycleTimeApart) {
  FakeCycles cycles;
  FakeControl control(/*drivable=*/true);
  CycleDriver driver(cycles, control, std::chrono::milliseconds(20));
  driver.Pace();  // the first cycle starts at once
  const auto first = std::chrono::steady_clock::now();
  driver.Pace();
  EXPECT_GE(std::chrono::steady_clock::now() - first,
            std::chrono::milliseconds(20));
  // A stopping engine is not held up, however long the cycle time.
  driver.set_cycle_time(std::chrono::hours(1));
  cycles.stopping = true;
  driver.Pace();
}

}  // namespace
}  // namespace hvd::runtime
