/* coordinator/launch_hostfile.c - reads an Open MPI hostfile for the hostfile launcher:
 * the hosts and slots the coordinator schedules over and assumes for the first batch
 * plan. mpirun reads the same file itself; only what the coordinator needs is parsed. */
#include "launcher_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int launch_hostfile_parse(launcher_t *l, const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "hostfile %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0;
    l->nhosts = 0;
    l->slots = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash) *hash = 0;
        char name[256];
        if (sscanf(line, "%255s", name) != 1) continue;
        if (l->nhosts == LAUNCH_MAX_HOSTS) {
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
        launch_host_t *h = &l->hosts[l->nhosts++];
        snprintf(h->name, sizeof h->name, "%s", name);
        h->slots = slots;
        l->slots += slots;
    }
    fclose(f);
    if (l->nhosts == 0) {
        snprintf(err, errlen, "hostfile %s: no hosts", path);
        return -1;
    }
    return 0;
}
