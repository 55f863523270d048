// horovodrun --mpi: OpenMPI's mpirun starts the workers (on this host, and
// over SSH on hosts in network namespaces), libhvd places each by
// OMPI_COMM_WORLD_RANK, and the job behaves as any other: output by rank,
// a failing rank's status, --mpi-args passed through.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>

#include "tests/util/job_output.h"
#include "tests/util/ssh_host.h"

namespace hvd::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTimeout = seconds(120);

bool HaveMpirun() { return ::access("/usr/bin/mpirun", X_OK) == 0; }

Result Horovodrun(std::vector<std::string> args,
                  std::vector<std::string> env = {}) {
  std::vector<std::string> argv = {HVD_HOROVODRUN};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunCommand(argv, kTimeout, env);
}

#define SKIP_WITHOUT_MPIRUN() \
  if (!HaveMpirun()) GTEST_SKIP() << "no /usr/bin/mpirun (openmpi-bin)"

TEST(MpirunTest, MpirunStartsTheWorkers) {
  SKIP_WITHOUT_MPIRUN();
  Result r = Horovodrun({"--mpi", "--verbose", "-np", "3", HVD_HELLO});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ExpectHello(r.out, 3);
  EXPECT_NE(r.err.find("3 workers started by mpirun"), std::string::npos)
      << r.err;
  // Each worker is mpirun's child and knows its place from mpirun's rank.
  r = Horovodrun({"--mpi", "-np", "2", "/bin/sh", "-c",
                  "echo $OMPI_COMM_WORLD_RANK $HVD_TASK_HOSTS"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> lines;
  for (const std::string& l : Lines(r.out)) lines.insert(l);
  EXPECT_EQ(lines, (std::set<std::string>{"[0]<stdout>:0 localhost:2",
                                          "[1]<stdout>:1 localhost:2"}))
      << r.out;
}

// It trains: train_mnist started by mpirun learns, every rank ending with
// the same weights (its per-epoch check).
TEST(MpirunTest, TrainMnistStartedByMpirun) {
  SKIP_WITHOUT_MPIRUN();
  TempDir dir;
  Result r =
      Horovodrun({"--mpi", "-np", "2", HVD_TRAIN_MNIST, "--train-limit", "4000",
                  "--test-limit", "1000", "--epochs", "2", "--warmup-epochs",
                  "1", "--log-dir", "", "--checkpoint-dir", dir.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("differ"), std::string::npos) << r.err;
  EXPECT_GT(TestAccuracy(r.out), 0.6) << r.out;
}

TEST(MpirunTest, FailingRankEndsTheJobWithItsStatus) {
  SKIP_WITHOUT_MPIRUN();
  Result r = Horovodrun({"--mpi", "-np", "3", HVD_TEST_WORKER, "--fail-rank",
                         "1", "--code", "3", "--sleep", "60"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("the first was rank 1 on host localhost"),
            std::string::npos)
      << r.err;
  EXPECT_LT(r.took, seconds(30));
}

TEST(MpirunTest, MpiArgsReachMpirun) {
  SKIP_WITHOUT_MPIRUN();
  Result r = Horovodrun({"--mpi", "--mpi-args", "-x 'HVD_TEST_WORD=two words'",
                         "-np", "1", "/bin/sh", "-c", "echo $HVD_TEST_WORD"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "[0]<stdout>:two words\n");
  // mpirun's own refusal of a bad argument ends the job, said by mpirun.
  r = Horovodrun(
      {"--mpi", "--mpi-args", "--no-such-flag", "-np", "1", HVD_HELLO});
  EXPECT_NE(r.exit_code, 0);
}

// Two hosts in network namespaces, reached by mpirun over SSH (its own
// rsh agent, with the test's key in --mpi-args).
TEST(MpirunNetnsTest, JobAcrossNamespaceHosts) {
  SKIP_WITHOUT_MPIRUN();
  TestNetwork net(2);
  if (!net.ok()) GTEST_SKIP() << "no network namespaces here: " << net.error();
  TempDir dir;
  SshHost a(dir, "a", net.address(0), net.ns(0));
  SshHost b(dir, "b", net.address(1), net.ns(1));
  ASSERT_TRUE(a.ok()) << a.error();
  ASSERT_TRUE(b.ok()) << b.error();
  b.AcceptKeyOf(a);
  const std::string ssh =
      "-i " + a.user_key() +
      " -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
      "-o LogLevel=ERROR";
  Result r = Horovodrun(
      {"--mpi", "--mpi-args",
       "-mca plm_rsh_args '" + ssh + "' -mca oob_tcp_if_include 10.211.0.0/24",
       "-np", "4", "-H", net.address(0) + ":2," + net.address(1) + ":2",
       HVD_HELLO});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ExpectHello(r.out, 4);
}

}  // namespace
}  // namespace hvd::testing
