/* The MPI side of bench/run_allreduce.sh: MPI_Allreduce of fp32 buffers of
 * the same sizes as allreduce_bench (4 B to 256 MiB in powers of 4); rank
 * 0 prints "RESULT mpi <bytes> <seconds per op>". */
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
  const size_t most = (size_t)256 << 20;
  float* buf = malloc(most);
  float* out = malloc(most);
  for (size_t i = 0; i < most / 4; ++i) buf[i] = 1.0f;
  /* Sizes given as arguments replace the sweep. */
  size_t sizes[32];
  int nsizes = 0;
  for (int i = 1; i < argc && nsizes < 32; ++i) {
    size_t b = strtoull(argv[i], NULL, 10);
    if (b >= 4 && b % 4 == 0 && b <= most) sizes[nsizes++] = b;
  }
  if (nsizes == 0) {
    for (size_t b = 4; b <= most; b *= 4) sizes[nsizes++] = b;
  }
  for (int k = 0; k < nsizes; ++k) {
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
