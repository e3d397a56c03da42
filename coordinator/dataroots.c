/* coordinator/dataroots.c - see dataroots.h. */
#include "dataroots.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clog.h"
#include "coord_internal.h"
#include "dataroot.h"
#include "errmsg.h"

/* Appends the resolved real to c's roots (the caller holds roots_lock, or no other
 * thread runs yet), then publishes the count. */
static void append_root(coordinator_t *c, const char *real)
{
    int n = atomic_load(&c->roots->n);
    memcpy(c->roots->list[n], real, strlen(real) + 1);
    atomic_store_explicit(&c->roots->n, n + 1, memory_order_release);
}

int coord_data_roots_start(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen)
{
    char defaults[2][PATH_MAX];
    const char *given[COORD_DATA_ROOTS_MAX];
    int n = cfg->ndata_roots, user = n > 0;
    atomic_store(&c->roots->n, 0);
    c->roots->nmissing = 0;
    if (n > COORD_DATA_ROOTS_MAX || (n > 0 && !cfg->data_roots)) {
        snprintf(err, errlen, "--data-root: at most %d", COORD_DATA_ROOTS_MAX);
        return -1;
    }
    if (user) {
        for (int i = 0; i < n; i++) given[i] = cfg->data_roots[i];
    } else {
        snprintf(defaults[0], sizeof defaults[0], "%s", COORD_DATA_ROOT_DEBIAN);
        snprintf(defaults[1], sizeof defaults[1], "%.*s/data", PATH_MAX - 8, c->state_dir);
        given[0] = defaults[0];
        given[1] = defaults[1];
        n = 2;
    }
    for (int i = 0; i < n; i++) {
        char real[PATH_MAX];
        if (realpath(given[i], real)) {
            append_root(c, real);
            continue;
        }
        if (user) {
            snprintf(err, errlen, "--data-root %.200s: %s", given[i], strerror(errno));
            return -1;
        }
        /* A default that is not there is no error (most machines lack one of them), but
         * not silent either: a data set put there later would otherwise be refused as
         * "not under a data root" with nothing in the log to say why. */
        clog_printf("data root %s skipped for now: %s; it is looked for again whenever data sets are listed or a "
                    "job is submitted",
                    given[i], strerror(errno));
        snprintf(c->roots->missing[c->roots->nmissing++], sizeof c->roots->missing[0], "%s", given[i]);
    }
    const char *v[COORD_DATA_ROOTS_MAX];
    int nv = coord_data_roots_get(c, v);
    char list[1024] = "";
    for (int i = 0; i < nv; i++) {
        size_t k = strlen(list);
        snprintf(list + k, sizeof list - k, "%s%s", i ? ", " : "", v[i]);
    }
    clog_printf("data roots: %s", nv ? list : "none yet (no job may name a dataset.path)");
    /* what this process's walks and opens of users' data are confined to (dataroot.h) */
    return dataroot_set(v, nv, err, errlen) == 0 ? 0 : -1;
}

void coord_data_roots_refresh(coordinator_t *c)
{
    if (!c->daemon) return;
    pthread_mutex_lock(&c->roots->lock);
    for (int i = 0; i < c->roots->nmissing;) {
        char real[PATH_MAX], err[PATH_MAX + 128];
        if (!realpath(c->roots->missing[i], real)) {
            i++;
            continue;
        }
        /* the process-wide roots first: a worker or walk told of the root must find it */
        if (dataroot_add(real, err, sizeof err) != 0) {
            clog_printf("data root %s exists now but cannot be used: %s", c->roots->missing[i], err);
        } else {
            append_root(c, real);
            clog_printf("data root %s exists now: a data root from here on", real);
        }
        memmove(c->roots->missing[i], c->roots->missing[i + 1],
                (size_t)(c->roots->nmissing - i - 1) * sizeof c->roots->missing[0]);
        c->roots->nmissing--;
    }
    pthread_mutex_unlock(&c->roots->lock);
}

int coord_data_roots_get(const coordinator_t *c, const char **v)
{
    int n = atomic_load_explicit(&c->roots->n, memory_order_acquire);
    for (int i = 0; i < n; i++) v[i] = c->roots->list[i];
    return n;
}

int coord_data_path_allowed(const coordinator_t *c, const char *field, const char *path, char *err, size_t errlen)
{
    char real[PATH_MAX];
    if (path[0] != '/') {
        errmsg(err, errlen,
               "%s: %.300s: must be an absolute path (the workers do not run in this "
               "process's directory)",
               field, path);
        return -1;
    }
    /* The roots first, existence after: outside them, "no such file" and "not under a
     * data root" would tell a client which paths exist (dataroot.h). */
    const char *roots_v[COORD_DATA_ROOTS_MAX];
    int nroots = coord_data_roots_get(c, roots_v);
    int where = dataroot_resolve(roots_v, nroots, path, real);
    if (where == DATAROOT_OK) return 0;
    if (where == DATAROOT_MISSING) {
        errmsg(err, errlen, "%s: %.300s: %s", field, path, strerror(errno));
        return -1;
    }
    char roots[512] = "";
    for (int i = 0; i < nroots; i++) {
        size_t k = strlen(roots);
        snprintf(roots + k, sizeof roots - k, "%s%s", i ? ", " : "", roots_v[i]);
    }
    errmsg(err, errlen, "%s: %.300s is not under a data root (--data-root; now: %s)", field, path,
           nroots ? roots : "none");
    return -1;
}
