/* The MPI counterpart of hvd_hello, for bench/run_launch.sh: every rank
 * allreduces rank + 1 once and checks the sum. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  double value = rank + 1, sum = 0;
  MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  printf("rank %d/%d: sum=%g\n", rank, size, sum);
  MPI_Finalize();
  return sum == size * (size + 1) / 2.0 ? 0 : 1;
}
