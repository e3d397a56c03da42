/* coordinator/dataroots.h - the daemon's data roots: the directories a submitted
 * dataset.path must resolve under and whose data sets GET /api/v1/datasets lists
 * (common/dataroot.h has the rule). --data-root DIR (each must exist at start), else
 * the defaults COORD_DATA_ROOT_DEBIAN and STATE_DIR/data. A default that does not exist
 * at start (a fresh state directory has no data/; the Debian data set package not yet
 * installed) is said so in the log and looked for again whenever data sets are listed
 * or a job is submitted (coord_userdata_sync): created later, it is a root from then on,
 * without a restart. Roots are only ever added, never changed or removed, so that a
 * reader on another thread sees a consistent list without a lock. */
#ifndef PACER_COORD_DATAROOTS_H
#define PACER_COORD_DATAROOTS_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "coordinator.h"

/* The coordinator's data roots (c->roots): resolved (realpath); appended to, never
 * changed, so read them with coord_data_roots_get. missing: the defaults not there yet,
 * under lock. */
typedef struct dataroots {
    char list[COORD_DATA_ROOTS_MAX][PATH_MAX];
    atomic_int n;
    char missing[2][PATH_MAX];
    int nmissing;
    pthread_mutex_t lock;
} dataroots_t;

/* At coordinator_start: resolves the roots of cfg (the daemon's c->state_dir is set),
 * logs each default it skips and why, and sets the process-wide roots (dataroot_set).
 * 0, or -1 with err naming a --data-root that does not resolve. */
int coord_data_roots_start(coordinator_t *c, const coord_config_t *cfg, char *err, size_t errlen);

/* Looks again for the defaults that were missing; one that exists now becomes a root
 * (logged). Cheap when none is missing. Any thread. */
void coord_data_roots_refresh(coordinator_t *c);

/* The roots now: fills v (COORD_DATA_ROOTS_MAX entries; each stays valid as long as c)
 * and returns how many. Any thread. */
int coord_data_roots_get(const coordinator_t *c, const char **v);

/* path (a spec's field, named in the message), absolute and resolved (realpath: no "..",
 * no symbolic link out), must be one of the data roots or under one (common/dataroot.h:
 * the rule the listing applies too): a client of the API must not make the workers read,
 * and the log then quote, any file the daemon's user can read, nor learn which paths exist
 * outside the roots. The message names the path as the client sent it, never what is in
 * the file. 0, or -1 with err. dataset.path, the tokenizer's files and init's obey it. */
int coord_data_path_allowed(const coordinator_t *c, const char *field, const char *path, char *err, size_t errlen);

#endif
