#include "launcher/spawner.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace hvd::launcher {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 5000);
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, n);
    } else if (n < 0 && errno == EAGAIN) {
      continue;
    } else {
      break;
    }
  }
  return out;
}

TEST(ResolveProgramTest, SearchesPath) {
  auto sh = ResolveProgram("sh", "/nonexistent:/bin:/usr/bin");
  ASSERT_TRUE(sh.ok());
  EXPECT_EQ(sh->back(), 'h');
  auto missing = ResolveProgram("no-such-program-hvd", "/bin");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ResolveProgram("/etc/passwd", "").ok());  // not executable
}

TEST(LocalSpawnerTest, RunsWithExactEnvironmentInOwnProcessGroup) {
  auto spawner = MakeLocalSpawner();
  ProcessSpec spec;
  spec.argv = {"sh", "-c", "echo $HVD_X; echo err >&2; ps -o pgid= -p $$"};
  spec.env = {"PATH=/usr/bin:/bin", "HVD_X=hello"};
  spec.cwd = "/";
  auto p = spawner->Spawn(spec);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::string out = ReadAll(p->stdout_fd);
  std::string err = ReadAll(p->stderr_fd);
  int status = 0;
  ASSERT_EQ(waitpid(p->pid, &status, 0), p->pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(out.substr(0, 6), "hello\n");
  EXPECT_EQ(std::stoi(out.substr(6)), p->pid);  // leads its own group
  EXPECT_EQ(err, "err\n");
  close(p->stdout_fd);
  close(p->stderr_fd);
}

TEST(LocalSpawnerTest, BadWorkingDirectoryIsAnError) {
  auto spawner = MakeLocalSpawner();
  ProcessSpec spec;
  spec.argv = {"true"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.cwd = "/nonexistent-dir-hvd";
  auto p = spawner->Spawn(spec);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("No such file"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
