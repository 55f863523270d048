// However a job ends, nothing of it stays in /dev/shm: a segment's name
// goes once every local rank has mapped it, and whatever a rank that died
// earlier left is swept by whoever outlives the host's workers (the
// launcher's watchdog here, hvd-remote-exec on other hosts).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "common/shm_names.h"
#include "launcher/remote_protocol.h"
#include "tests/util/subprocess.h"
#include "tests/util/temp_dir.h"

namespace hvd::testing {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::vector<std::string> JobEntries(const std::string& job_id) {
  std::vector<std::string> names;
  const std::string prefix = ShmJobPrefix(job_id);
  for (auto& e : fs::directory_iterator("/dev/shm")) {
    std::string n = e.path().filename().string();
    if (n.rfind(prefix, 0) == 0) names.push_back(n);
  }
  return names;
}

bool WaitFor(const std::function<bool()>& done, milliseconds timeout) {
  auto until = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

std::string ReadTrimmed(const std::string& path) {
  std::ifstream f(path);
  std::string s;
  f >> s;
  return s;
}

// A job of two local ranks whose shell writes the job id (and each rank's
// pid) into `dir`, runs `rank1` on rank 1 first, and then execs hvd_hello.
class ShmCleanupTest : public ::testing::Test {
 protected:
  std::unique_ptr<Subprocess> Start(const std::string& rank1) {
    const std::string script =
        "echo $HVD_JOB_ID > " + dir_.path() + "/job; echo $$ > " + dir_.path() +
        "/$HOROVOD_RANK.pid; if [ \"$HOROVOD_RANK\" = 1 ]; then " + rank1 +
        "; fi; exec " + HVD_HELLO;
    return std::make_unique<Subprocess>(std::vector<std::string>{
        HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c", script});
  }
  // The job's id once a worker wrote it, and a segment of it appeared.
  std::string JobWithASegment() {
    std::string job;
    EXPECT_TRUE(WaitFor(
        [&] {
          job = ReadTrimmed(dir_.path() + "/job");
          return !job.empty() && !JobEntries(job).empty();
        },
        seconds(20)))
        << "no segment of job '" << job << "' appeared";
    return job;
  }
  TempDir dir_;
};

// The case: rank 1 dies before it maps the segment rank 0 made.
TEST_F(ShmCleanupTest, PeerKilledBeforeMappingLeavesNothing) {
  auto job = Start("sleep 2; kill -9 $$");
  const std::string id = JobWithASegment();
  Result r = job->Wait(seconds(60));
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_EQ(JobEntries(id), std::vector<std::string>{});
}

// The creator itself dies while its peer has not come yet.
TEST_F(ShmCleanupTest, CreatorKilledBeforeItsPeerMappedLeavesNothing) {
  auto job = Start("sleep 30");
  const std::string id = JobWithASegment();
  pid_t rank0 = std::stoi(ReadTrimmed(dir_.path() + "/0.pid"));
  ASSERT_EQ(kill(rank0, SIGKILL), 0);
  Result r = job->Wait(seconds(60));
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_EQ(JobEntries(id), std::vector<std::string>{});
}

// Once both have mapped, the names are gone already; a rank killed in the
// middle of the job changes nothing.
TEST_F(ShmCleanupTest, RankKilledAfterMappingLeavesNothing) {
  // TMPDIR: horovodrun dumps the survivor's flight recorder there.
  Subprocess job({HVD_HOROVODRUN, "-np", "2", "/bin/sh", "-c",
                  "echo $HVD_JOB_ID > " + dir_.path() + "/job; exec " +
                      HVD_TEST_WORKER + " --stream 200"},
                 {"TMPDIR=" + dir_.path()});
  Result r = job.Wait(seconds(60));
  EXPECT_NE(r.exit_code, 0) << r.err;
  const std::string id = ReadTrimmed(dir_.path() + "/job");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(JobEntries(id), std::vector<std::string>{});
}

// SIGKILL to horovodrun: its watchdog kills the workers and sweeps.
TEST_F(ShmCleanupTest, KilledLauncherLeavesNothing) {
  auto job = Start("sleep 30");
  const std::string id = JobWithASegment();
  ASSERT_EQ(kill(job->pid(), SIGKILL), 0);
  job->Wait(seconds(30));
  EXPECT_TRUE(WaitFor([&] { return JobEntries(id).empty(); }, seconds(10)))
      << JobEntries(id).front();
}

// hvd-remote-exec on its own, as sshd starts it: when its worker's group
// ends (here: the launcher's channel closes), it removes the names of the
// job that nobody uses, and leaves those in use and other jobs' alone.
TEST(RemoteExecTest, SweepsTheJobsNamesItsWorkerLeft) {
  TempDir dir;
  const std::string job = "feedc0de0000111122223333";
  const std::string other = "0000111122223333feedc0de";
  const std::string left = ShmJobPrefix(job) + "data-1";
  const std::string used = ShmJobPrefix(job) + "data-2";
  const std::string foreign = ShmJobPrefix(other) + "data-1";
  for (const std::string& n : {used, foreign}) {
    std::ofstream("/dev/shm/" + n) << "x";
  }
  // This test holds `used` open, as a live worker of another slot would.
  int fd = open(("/dev/shm/" + used).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  launcher::RemoteLaunch launch;
  launch.cwd = dir.path();
  launch.env = {"PATH=/usr/bin:/bin", "HVD_JOB_ID=" + job};
  // The worker makes a segment, holds it, and waits to be killed.
  launch.argv = {"sh", "-c",
                 "echo x > /dev/shm/" + left + "; exec 3</dev/shm/" + left +
                     "; touch " + dir.path() + "/ready; exec sleep 60"};
  {
    std::ofstream(dir.path() + "/launch", std::ios::binary)
        << launcher::EncodeRemoteLaunch(launch);
  }
  // stdin: the launch, then an open channel until `ready`, then EOF.
  Subprocess wrapper({"/bin/sh", "-c",
                      "(cat " + dir.path() + "/launch; while [ ! -e " +
                          dir.path() + "/ready ]; do sleep 0.05; done) | " +
                          HVD_REMOTE_EXEC});
  Result r = wrapper.Wait(seconds(30));
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 137) << r.err;
  EXPECT_TRUE(fs::exists(dir.path() + "/ready")) << r.err;
  EXPECT_FALSE(fs::exists("/dev/shm/" + left)) << r.err;
  EXPECT_TRUE(fs::exists("/dev/shm/" + used));
  EXPECT_TRUE(fs::exists("/dev/shm/" + foreign));
  close(fd);
  for (const std::string& n : {left, used, foreign}) {
    unlink(("/dev/shm/" + n).c_str());
  }
}

// hvd-remote-exec ends its worker's group however the worker's side ends,
// but it cannot when it is itself killed with -9 (a chaos run found the
// worker left running): the worker then goes with it.
TEST(RemoteExecTest, AWorkerDoesNotOutliveItsWrapperKilled) {
  TempDir dir;
  launcher::RemoteLaunch launch;
  launch.cwd = dir.path();
  launch.env = {"PATH=/usr/bin:/bin"};
  launch.argv = {"sh", "-c",
                 "echo $$ > " + dir.path() + "/worker.pid; exec sleep 60"};
  {
    std::ofstream(dir.path() + "/launch", std::ios::binary)
        << launcher::EncodeRemoteLaunch(launch);
  }
  // The channel stays open (as sshd's would) until `done`.
  Subprocess shell({"/bin/sh", "-c",
                    "(cat " + dir.path() + "/launch; while [ ! -e " +
                        dir.path() + "/done ]; do sleep 0.05; done) | " +
                        HVD_REMOTE_EXEC + " & echo $! > " + dir.path() +
                        "/wrapper.pid; wait"});
  pid_t wrapper = 0, worker = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        wrapper = std::atoi(ReadTrimmed(dir.path() + "/wrapper.pid").c_str());
        worker = std::atoi(ReadTrimmed(dir.path() + "/worker.pid").c_str());
        return wrapper > 0 && worker > 0;
      },
      seconds(20)));
  auto alive = [](pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    return static_cast<bool>(stat >> pid_field >> comm >> state) &&
           state != "Z";
  };
  ASSERT_TRUE(alive(worker));
  kill(wrapper, SIGKILL);
  EXPECT_TRUE(WaitFor([&] { return !alive(worker); }, seconds(10)))
      << "the worker outlived its hvd-remote-exec";
  if (alive(worker)) kill(worker, SIGKILL);
  std::ofstream(dir.path() + "/done") << "";
  EXPECT_FALSE(shell.Wait(seconds(30)).timed_out);
}

}  // namespace
}  // namespace hvd::testing
