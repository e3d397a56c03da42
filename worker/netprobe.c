/* worker/netprobe.c - see netprobe.h. */
#include "netprobe.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "comm_mpi.h"
#include "hostname.h"

/* "[0,2]" of the ranks whose flag is set, into out (room for every rank of a world the
 * coordinator starts: LAUNCH_MAX_HOSTS). */
static void rank_list(const int *flag, int n, char *out, size_t len)
{
    size_t o = 0;
    out[o++] = '[';
    for (int p = 0; p < n && o + 16 < len; p++)
        if (flag[p]) o += (size_t)snprintf(out + o, len - o, "%s%d", o > 1 ? "," : "", p);
    snprintf(out + o, len - o, "]");
}

static void say(int rank, int n, const char *host, const int *heard, const int *sent, double waited)
{
    static char a[8192], b[8192];
    rank_list(heard, n, a, sizeof a);
    rank_list(sent, n, b, sizeof b);
    /* The host name is the machine's own (gethostname or the Slurm node name): printable,
     * no quotes, but escaped all the same. */
    printf("{\"netprobe\": {\"rank\": %d, \"ranks\": %d, \"host\": \"", rank, n);
    for (const char *c = host; *c; c++) {
        if (*c == '"' || *c == '\\') putchar('\\');
        putchar((unsigned char)*c >= 0x20 ? *c : '?');
    }
    printf("\", \"heard\": %s, \"sent\": %s, \"waited_s\": %.3f}}\n", a, b, waited);
    fflush(stdout);
}

int netprobe_run(double seconds)
{
    char host[256];
    host_name(host, sizeof host);
    if (!comm_launched_by_mpirun()) {
        int none[1] = {0};
        say(0, 1, host, none, none, 0);
        return 0;
    }
    int rank = 0, n = 1;
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    /* A peer that is cut off must show as not heard, not end the probe. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int *token = calloc((size_t)n, sizeof *token), *heard = calloc((size_t)n, sizeof *heard),
        *sent = calloc((size_t)n, sizeof *sent);
    MPI_Request *rq = malloc(2 * (size_t)n * sizeof *rq);
    if (!token || !heard || !sent || !rq) {
        fprintf(stderr, "pacer-worker: --netprobe: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    /* rq[p]: the receive from p; rq[n + p]: the send to p. Done (or failed) ones are null. */
    int left = 0;
    for (int p = 0; p < 2 * n; p++) rq[p] = MPI_REQUEST_NULL;
    for (int p = 0; p < n; p++) {
        if (p == rank) continue;
        if (MPI_Irecv(&token[p], 1, MPI_INT, p, 77, MPI_COMM_WORLD, &rq[p]) == MPI_SUCCESS) left++;
        else rq[p] = MPI_REQUEST_NULL;
        if (MPI_Isend(&rank, 1, MPI_INT, p, 77, MPI_COMM_WORLD, &rq[n + p]) == MPI_SUCCESS) left++;
        else rq[n + p] = MPI_REQUEST_NULL;
    }
    double t0 = clock_mono_s();
    while (left > 0 && clock_mono_s() - t0 < seconds) {
        for (int k = 0; k < 2 * n; k++) {
            if (rq[k] == MPI_REQUEST_NULL) continue;
            int done = 0, rc = MPI_Test(&rq[k], &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS) {
                rq[k] = MPI_REQUEST_NULL; /* failed: neither heard nor sent */
                left--;
            } else if (done) {
                if (k < n) heard[k] = token[k] == k;
                else sent[k - n] = 1;
                left--;
            }
        }
        if (left > 0) clock_sleep_s(0.001);
    }
    int all = 1;
    for (int p = 0; p < n; p++) all &= p == rank || (heard[p] && sent[p]);
    say(rank, n, host, heard, sent, clock_mono_s() - t0);
    if (!all) {
        /* Requests still pending point into token and rank: nothing is freed. */
        clock_sleep_s(NETPROBE_LINGER_S);
        _exit(3);
    }
    free(token);
    free(heard);
    free(sent);
    free(rq);
    MPI_Finalize();
    return 0;
}
