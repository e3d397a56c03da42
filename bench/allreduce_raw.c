/* bench/allreduce_raw.c - the baseline for ssgd's communication time: a barrier, then a
 * raw MPI_Allreduce(SUM) of COUNT floats, ITERS times; prints the median allreduce time
 * in seconds at rank 0. With TOUCH_MB > 0 each iteration first writes that many MB of
 * other memory, as a training step does, so caches are as cold as they are in training.
 * usage: mpirun -np N allreduce_raw COUNT [ITERS [TOUCH_MB]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "median.h"

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, getenv("RAW_FUNNELED") ? MPI_THREAD_FUNNELED : MPI_THREAD_SINGLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int count = argc > 1 ? atoi(argv[1]) : 61708;
    int iters = argc > 2 ? atoi(argv[2]) : 200;
    size_t touch = argc > 3 ? (size_t)atoi(argv[3]) << 20 : 0;
    char *junk = touch ? calloc(touch, 1) : NULL;
    float *buf = calloc((size_t)count, sizeof(float));
    double *t = calloc((size_t)iters, sizeof(double));
    if (!buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < iters; i++) {
        for (size_t k = 0; junk && k < touch; k += 64) junk[k] += 1;
        for (int k = 0; k < count; k++) buf[k] = (float)k; /* the gradient was just written */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[i] = MPI_Wtime() - t0;
    }
    double med = bench_median(t, iters);
    if (rank == 0) printf("%.9f\n", med);
    free(buf);
    free(junk);
    free(t);
    MPI_Finalize();
    return 0;
}
