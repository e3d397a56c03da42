/* bench/incast_raw.c - how a network shares one link among simultaneous transfers: after
 * a barrier every rank but 0 sends COUNT floats to rank 0 at once (an asgd parameter
 * server receiving its workers' pushes). Rank 0 prints, for the 1st, 2nd, ... arrival,
 * the median over ITERS of when it completed (seconds after the barrier). A max-min fair
 * flow model (SimGrid's) finishes them all together at the end; a FIFO link under TCP
 * finishes them closer to one after another, which gives the same last arrival but an
 * earlier mean. With STAGGER_MS, sender k starts (k - 1) x STAGGER_MS after the barrier,
 * as pushes that reach a parameter server at different times. Built with mpicc for a
 * real network and with smpicc for the simulator (docs/RESULTS.md, "Does the simulator
 * predict real runs?").
 * usage: mpirun -np N incast_raw COUNT [ITERS [STAGGER_MS]] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "median.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int count = argc > 1 ? atoi(argv[1]) : 61708;
    int iters = argc > 2 ? atoi(argv[2]) : 20;
    double stagger_ms = argc > 3 ? atof(argv[3]) : 0;
    if (size < 2 || count < 1 || iters < 1) {
        if (rank == 0) fprintf(stderr, "usage: mpirun -np N (N >= 2) incast_raw COUNT [ITERS]\n");
        MPI_Finalize();
        return 2;
    }
    int senders = size - 1;
    float *buf = calloc((size_t)count * (size_t)senders, sizeof(float));
    MPI_Request *reqs = calloc((size_t)senders, sizeof(MPI_Request));
    double *t = calloc((size_t)senders * (size_t)iters, sizeof(double)); /* [arrival][iter] */
    double *col = calloc((size_t)iters, sizeof(double));
    if (!buf || !reqs || !t || !col) MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < iters; i++) {
        if (rank == 0)
            for (int s = 0; s < senders; s++)
                MPI_Irecv(buf + (size_t)s * (size_t)count, count, MPI_FLOAT, s + 1, 0, MPI_COMM_WORLD, &reqs[s]);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (rank == 0) {
            for (int k = 0; k < senders; k++) {
                int which;
                MPI_Waitany(senders, reqs, &which, MPI_STATUS_IGNORE);
                t[(size_t)k * (size_t)iters + (size_t)i] = MPI_Wtime() - t0;
            }
        } else {
            double wait_s = (rank - 1) * stagger_ms * 1e-3;
            struct timespec ts = {(time_t)wait_s, (long)((wait_s - (double)(time_t)wait_s) * 1e9)};
            if (wait_s > 0) nanosleep(&ts, NULL); /* SMPI counts it in simulated time */
            MPI_Send(buf, count, MPI_FLOAT, 0, 0, MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        double mean = 0;
        for (int k = 0; k < senders; k++) {
            for (int i = 0; i < iters; i++) col[i] = t[(size_t)k * (size_t)iters + (size_t)i];
            double med = bench_median(col, iters);
            mean += med / senders;
            printf("%s%.6f", k ? " " : "", med);
        }
        printf("  mean %.6f\n", mean);
    }
    free(buf);
    free(reqs);
    free(t);
    free(col);
    MPI_Finalize();
    return 0;
}
