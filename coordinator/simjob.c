/* coordinator/simjob.c - see simjob.h. */
#include "simjob.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PLATFORMS_MAX 256

/* One path field: "" stays; anything else must resolve to a regular file inside dir. */
static int resolve_one(const char *dir, const char *field, char *path, size_t cap, char *err, size_t errlen)
{
    if (!path[0]) return 0;
    if (!dir[0]) {
        snprintf(err, errlen,
                 "%s: this coordinator has no platform directory (--sim-platforms); leave it empty "
                 "to simulate the platform the other simulate fields describe",
                 field);
        return -1;
    }
    char cand[PATH_MAX + SPEC_PATH_MAX + 2], real[PATH_MAX];
    if (!strchr(path, '/')) snprintf(cand, sizeof cand, "%s/%s", dir, path);
    else snprintf(cand, sizeof cand, "%s", path);
    size_t n = strlen(dir);
    struct stat st;
    if (!realpath(cand, real) || strncmp(real, dir, n) != 0 || real[n] != '/' || stat(real, &st) != 0 ||
        !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: must name a file under %s (the coordinator's --sim-platforms), not '%.200s'", field,
                 dir, path);
        return -1;
    }
    if (strlen(real) >= cap) {
        snprintf(err, errlen, "%s: %.200s: path longer than %zu bytes", field, real, cap - 1);
        return -1;
    }
    memcpy(path, real, strlen(real) + 1);
    return 0;
}

int simjob_resolve(const char *dir, job_spec_t *s, char *err, size_t errlen)
{
    if (resolve_one(dir, "simulate.platform", s->simulate.platform, sizeof s->simulate.platform, err, errlen) != 0)
        return -1;
    return resolve_one(dir, "simulate.hostfile", s->simulate.hostfile, sizeof s->simulate.hostfile, err, errlen);
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

json_t *simjob_platforms(const char *dir)
{
    json_t *out = json_array();
    DIR *d = dir[0] ? opendir(dir) : NULL;
    if (!d) return out;
    char *names[PLATFORMS_MAX];
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < PLATFORMS_MAX) {
        size_t len = strlen(e->d_name);
        if (len > 4 && strcmp(e->d_name + len - 4, ".xml") == 0 && e->d_name[0] != '.' && (names[n] = strdup(e->d_name)))
            n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof names[0], by_name);
    for (int i = 0; i < n; i++) {
        if (out) json_array_append_new(out, json_string(names[i]));
        free(names[i]);
    }
    return out;
}
