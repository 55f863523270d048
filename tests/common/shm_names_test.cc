#include "common/shm_names.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "common/random.h"

namespace hvd {
namespace {

bool Exists(const std::string& name) {
  return std::filesystem::exists("/dev/shm/" + name);
}

// A /dev/shm entry of its own, removed at the end whatever the test did.
class ShmFile {
 public:
  explicit ShmFile(std::string name) : name_(std::move(name)) {
    int fd = ::open(("/dev/shm/" + name_).c_str(),
                    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    EXPECT_GE(fd, 0) << name_;
    EXPECT_EQ(::ftruncate(fd, 4096), 0);
    ::close(fd);
  }
  ~ShmFile() { ::unlink(("/dev/shm/" + name_).c_str()); }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

std::string NewJobId() { return *RandomHex(16); }

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(ShmNamesTest, PrefixIsTheFirstSixteenCharactersOfTheJob) {
  EXPECT_EQ(ShmJobPrefix("0123456789abcdef0123"), "hvd-0123456789abcdef-");
  EXPECT_EQ(ShmJobPrefix("abc"), "hvd-abc-");
}

TEST(ShmNamesTest, RemovesOnlyTheJobsUnusedNames) {
  const std::string job = NewJobId(), other = NewJobId();
  const std::string p = ShmJobPrefix(job);
  ShmFile unused(p + "data-1"), held(p + "data-2"), mapped(p + "control-3"),
      foreign(ShmJobPrefix(other) + "data-1");
  // Held through an open descriptor, and through a mapping whose
  // descriptor is closed: both are in use.
  int fd = ::open(("/dev/shm/" + held.name()).c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  int mfd = ::open(("/dev/shm/" + mapped.name()).c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(mfd, 0);
  void* m = ::mmap(nullptr, 4096, PROT_READ, MAP_SHARED, mfd, 0);
  ASSERT_NE(m, MAP_FAILED);
  ::close(mfd);

  ShmSweep sweep = SweepJobSegments(job);
  EXPECT_EQ(sweep.removed, std::vector<std::string>{unused.name()});
  EXPECT_TRUE(Has(sweep.in_use, held.name()));
  EXPECT_TRUE(Has(sweep.in_use, mapped.name()));
  EXPECT_FALSE(Exists(unused.name()));
  EXPECT_TRUE(Exists(held.name()));
  EXPECT_TRUE(Exists(mapped.name()));
  EXPECT_TRUE(Exists(foreign.name()));

  ::close(fd);
  ::munmap(m, 4096);
  sweep = SweepJobSegments(job);
  EXPECT_EQ(sweep.removed.size(), 2u);
  EXPECT_TRUE(sweep.in_use.empty());
  EXPECT_FALSE(Exists(held.name()));
  EXPECT_FALSE(Exists(mapped.name()));
  EXPECT_TRUE(Exists(foreign.name()));
}

// A process of a group that was just killed does not keep a name: it will
// never use it again.
TEST(ShmNamesTest, ProcessesOfDyingGroupsDoNotCount) {
  const std::string job = NewJobId();
  ShmFile held(ShmJobPrefix(job) + "data-1");
  // The child allocates nothing (this process may have threads), and it
  // leaves when this process does, however that ends: it waits on a pipe
  // whose only writer is this process (`stay`).
  const std::string path = "/dev/shm/" + held.name();
  int pipefd[2], stay[2];
  ASSERT_EQ(::pipe(pipefd), 0);
  ASSERT_EQ(::pipe(stay), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setpgid(0, 0);
    ::close(stay[1]);
    int fd = ::open(path.c_str(), O_RDONLY);
    (void)!::write(pipefd[1], fd >= 0 ? "y" : "n", 1);
    char c;
    (void)!::read(stay[0], &c, 1);
    ::_exit(0);
  }
  ::close(stay[0]);
  ::setpgid(child, child);
  char ready = 0;
  ASSERT_EQ(::read(pipefd[0], &ready, 1), 1);
  ASSERT_EQ(ready, 'y');
  EXPECT_TRUE(SweepJobSegments(job).removed.empty());
  // Still running past the sweep's wait for the dying: it does not count.
  EXPECT_TRUE(SweepJobSegments(job, {child}, std::chrono::milliseconds(100))
                  .removed.size() == 1);
  EXPECT_FALSE(Exists(held.name()));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ::close(pipefd[0]);
  ::close(pipefd[1]);
  ::close(stay[1]);
}

// A child in a process group of its own, told to the sweep as dying,
// that makes the job's segment `name` `delay_us` after the sweep begins
// (it starts counting when the parent says go, just before the sweep),
// then exits: the sweep must list the names only once it is gone.
void ExpectSweptAfterTheDyingMakeIt(const std::string& job,
                                    const std::string& name,
                                    useconds_t delay_us) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::setpgid(0, 0);
    char c;
    (void)!::read(go[0], &c, 1);
    ::usleep(delay_us);
    int fd = ::open(("/dev/shm/" + name).c_str(),
                    O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  ::setpgid(child, child);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  ShmSweep sweep = SweepJobSegments(job, {child});
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(Has(sweep.removed, name));
  EXPECT_FALSE(Exists(name));
  ::unlink(("/dev/shm/" + name).c_str());
  ::close(go[0]);
  ::close(go[1]);
}

// A killed worker on another CPU may finish creating a segment after
// kill() returned: the sweep lists the names once the dying are gone. Here
// the "dying" child makes its segment a moment after the sweep began.
TEST(ShmNamesTest, ASegmentMadeWhileTheDyingEndIsSwept) {
  const std::string job = NewJobId();
  ExpectSweptAfterTheDyingMakeIt(job, ShmJobPrefix(job) + "shmctl-1",
                                 100 * 1000);
}

// One of the dying that does not run again for longer than a loaded
// machine's usual moment (here: it is not killed, and makes its segment
// 2.5 s on): the sweep still waits for it to be gone before it lists.
TEST(ShmNamesTest, ASegmentMadeByASlowDyingProcessIsSwept) {
  const std::string job = NewJobId();
  ExpectSweptAfterTheDyingMakeIt(job, ShmJobPrefix(job) + "shmctl-2",
                                 2500 * 1000);
}

TEST(ShmNamesTest, AnEmptyJobIdSweepsNothing) {
  ShmFile stray("hvd--data-" + NewJobId());
  EXPECT_TRUE(SweepJobSegments("").removed.empty());
  EXPECT_TRUE(Exists(stray.name()));
}

}  // namespace
}  // namespace hvd
