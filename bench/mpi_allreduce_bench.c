/* The MPI side of bench/run_allreduce.sh: MPI_Allreduce of fp32 buffers of
 * the same sizes as allreduce_bench; rank 0 prints
 * "RESULT mpi <bytes> <seconds per op>". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int Compare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const size_t sizes[] = {4, 64, 1 << 10, 16 << 10, 256 << 10, 1 << 20,
                          4 << 20, 16 << 20, 64 << 20};
  float* buf = malloc((size_t)64 << 20);
  float* out = malloc((size_t)64 << 20);
  for (size_t i = 0; i < ((size_t)64 << 20) / 4; ++i) buf[i] = 1.0f;
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); ++k) {
    size_t bytes = sizes[k];
    size_t iters = ((size_t)256 << 20) / bytes;
    if (iters < 5) iters = 5;
    if (iters > 2000) iters = 2000;
    int count = (int)(bytes / 4);
    for (int i = 0; i < 3; ++i) {
      MPI_Allreduce(buf, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* The median of 5 batches, as allreduce_bench does. */
    size_t batch = iters / 5 < 2 ? 2 : iters / 5;
    double per_op[5];
    for (int b = 0; b < 5; ++b) {
      double start = MPI_Wtime();
      for (size_t i = 0; i < batch; ++i) {
        MPI_Allreduce(buf, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      }
      per_op[b] = (MPI_Wtime() - start) / (double)batch;
    }
    qsort(per_op, 5, sizeof(double), Compare);
    if (rank == 0) printf("RESULT mpi %zu %.9f\n", bytes, per_op[2]);
  }
  free(buf);
  free(out);
  MPI_Finalize();
  return 0;
}
