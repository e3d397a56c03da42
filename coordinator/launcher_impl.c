/* coordinator/launcher_impl.c - see launcher_impl.h: what every launcher kind calls (the
 * log's header and note lines, pacer's MCA defaults, a host by name). launcher.c above
 * dispatches to the kinds; they call down into this file, never up into launcher.c. */
#include "launcher_impl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"

const launch_host_t *launcher_host(const launcher_t *l, const char *name)
{
    for (int i = 0; i < l->nhosts; i++)
        if (strcmp(l->hosts[i].name, name) == 0) return &l->hosts[i];
    return NULL;
}

#define EAGER_PAIR \
    "OMPI_MCA_btl_tcp_eager_limit=" LAUNCH_TCP_EAGER_BYTES ",OMPI_MCA_btl_tcp_max_send_size=" LAUNCH_TCP_EAGER_BYTES

int launcher_mca_defaults(const char **argv, int a, int srun)
{
    /* The pair goes together: a user who set one chose the protocol, and half of pacer's
     * default beside it would be a setting neither of us measured. */
    static const char *const USER[] = {"OMPI_MCA_btl_tcp_eager_limit", "OMPI_MCA_btl_tcp_max_send_size"};
    int pair = 1;
    for (size_t i = 0; i < sizeof USER / sizeof USER[0]; i++)
        if (getenv(USER[i])) pair = 0;
    if (srun) {
        /* Slurm's PMIx plugin (22.05) runs Open MPI's modex, a fence that collects data,
         * as a ring and its barrier at the end of MPI_Init as a tree unless one kind is
         * named: so run, a rank now and then left MPI_Init while another was still in the
         * modex, whose TCP receive then found no handler for the first message and crashed
         * (docs/ARCHITECTURE.md, "Slurm's fences"). Trees for both did not. A
         * SLURM_PMIX_FENCE in the coordinator's environment wins. */
        int fence = getenv(LAUNCH_SLURM_FENCE_ENV) == NULL;
        if (pair || fence)
            argv[a++] = pair && fence ? "--export=ALL," EAGER_PAIR "," LAUNCH_SLURM_FENCE
                        : pair        ? "--export=ALL," EAGER_PAIR
                                      : "--export=ALL," LAUNCH_SLURM_FENCE;
        return a;
    }
    if (!pair) return a;
    argv[a++] = "--mca";
    argv[a++] = "btl_tcp_eager_limit";
    argv[a++] = LAUNCH_TCP_EAGER_BYTES;
    argv[a++] = "--mca";
    argv[a++] = "btl_tcp_max_send_size";
    argv[a++] = LAUNCH_TCP_EAGER_BYTES;
    return a;
}

void launcher_log_header(const char *log_path, const char *id, int attempt, const char *const *argv)
{
    FILE *lf = fopen(log_path, "a");
    if (!lf) return;
    time_t t = (time_t)clock_wall_s();
    struct tm tm;
    char when[32];
    localtime_r(&t, &tm);
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    fprintf(lf, "=== pacer-coordinator %s: job %s attempt %d:", when, id, attempt);
    for (int i = 0; argv[i]; i++) fprintf(lf, " %s", argv[i]);
    fprintf(lf, " ===\n");
    fclose(lf);
}

void launcher_log_note(const char *log_path, const char *fmt, ...)
{
    FILE *lf = fopen(log_path, "a");
    if (!lf) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("pacer-coordinator: ", lf);
    vfprintf(lf, fmt, ap);
    fputc('\n', lf);
    va_end(ap);
    fclose(lf);
}
