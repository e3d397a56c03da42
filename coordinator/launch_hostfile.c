/* coordinator/launch_hostfile.c - reads an Open MPI hostfile for the hostfile launcher:
 * the hosts and slots the coordinator schedules over and assumes for the first batch
 * plan. mpirun reads the same file itself; only what the coordinator needs is parsed.
 * An attempt that may use only some hosts (an elastic restart, a benchmark) gets a
 * hostfile of its own, written here. */
#include "launcher_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs.h"
#include "launch.h"

int launch_hostfile_parse(const char *path, launch_host_t *hosts, int *nhosts, int *nslots, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "hostfile %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, n = 0, total = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char name[256];
        if (sscanf(line, "%255s", name) != 1) continue;
        if (n == LAUNCH_MAX_HOSTS) {
            snprintf(err, errlen, "hostfile %s: more than %d hosts", path, LAUNCH_MAX_HOSTS);
            fclose(f);
            return -1;
        }
        int slots = 1;
        char *s = strstr(line, "slots=");
        if (s && (s == line || s[-1] != '_')) {
            long v = strtol(s + 6, NULL, 10);
            if (v < 1 || v > LAUNCH_MAX_SLOTS) {
                snprintf(err, errlen, "hostfile %s:%d: slots must be 1 to %d", path, lineno, LAUNCH_MAX_SLOTS);
                fclose(f);
                return -1;
            }
            slots = (int)v;
        }
        /* A host listed twice has the slots of both lines, as mpirun counts them. */
        int dup = -1;
        for (int i = 0; i < n; i++)
            if (strcmp(hosts[i].name, name) == 0) dup = i;
        if (dup >= 0) {
            if (hosts[dup].slots > LAUNCH_MAX_SLOTS - slots) {
                snprintf(err, errlen, "hostfile %s:%d: more than %d slots on %s", path, lineno, LAUNCH_MAX_SLOTS, name);
                fclose(f);
                return -1;
            }
            hosts[dup].slots += slots;
            total += slots;
            continue;
        }
        launch_host_t *h = &hosts[n++];
        memset(h, 0, sizeof *h);
        snprintf(h->name, sizeof h->name, "%s", name);
        snprintf(h->addr, sizeof h->addr, "%s", name);
        h->slots = slots;
        total += slots;
    }
    fclose(f);
    if (n == 0) {
        snprintf(err, errlen, "hostfile %s: no hosts", path);
        return -1;
    }
    *nhosts = n;
    *nslots = total;
    return 0;
}

int launch_hostfile_write(const launcher_t *l, const char *path, const char *const *names, int n, char *err,
                          size_t errlen)
{
    size_t cap = (size_t)n * 300 + 64, used = 0;
    char *text = malloc(cap);
    if (!text) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    used += (size_t)snprintf(text, cap, "# pacer-coordinator: the hosts this attempt may use\n");
    for (int i = 0; i < n; i++) {
        const launch_host_t *h = launcher_host(l, names[i]);
        used += (size_t)snprintf(text + used, cap - used, "%s slots=%d\n", names[i], h ? h->slots : 1);
    }
    int rc = fs_atomic_write_fixed(path, text, used, 0644);
    if (rc != 0) snprintf(err, errlen, "%.300s: %s", path, strerror(errno));
    free(text);
    return rc;
}
