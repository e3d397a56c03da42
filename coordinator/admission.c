/* coordinator/admission.c - see admission.h. */
#include "admission.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "coord_internal.h"
#include "dataroots.h"
#include "dsprobe.h"
#include "errmsg.h"
#include "hostmem.h"
#include "hosts.h"
#include "init_source.h"
#include "jobfile.h"
#include "launcher.h"
#include "modelstore.h"
#include "param_names.h"
#include "policy.h"
#include "simjob.h"
#include "tokenizer.h"

/* The spec's init (init_source.h), init.job's file looked up here. */
static int init_place(coordinator_t *c, job_spec_t *s, char *err, size_t errlen)
{
    char path[PATH_MAX] = "";
    int code = s->init.job[0] ? coord_model_file_path(c, s->init.job, "model.safetensors", path, sizeof path) : COORD_OK;
    return coord_init_place(c, s, code, path, err, errlen);
}

/* dataset.path, resolved (realpath: no "..", no symbolic link out), must be one of the
 * data roots or under one (common/dataroot.h: the rule the listing applies too): a
 * client of the API must not make the workers read, and the log then quote, any file
 * the daemon's user can read, nor learn which paths exist outside the roots. Only the daemon checks: the
 * command-line client writes to Redis itself, as the operator. The message names the
 * path as the client sent it, never what is in the file. */
static int data_path_allowed(const coordinator_t *c, const char *path, char *err, size_t errlen)
{
    return coord_data_path_allowed(c, "dataset.path", path, err, errlen);
}

/* The same rule for every file a spec names for the workers to read beside the data set
 * (the BPE tokenizer's vocab.json, merges.txt or tokenizer.json), named as field. */
static int tokenizer_paths_allowed(const coordinator_t *c, const job_spec_t *s, char *err, size_t errlen)
{
    const char *field[3] = {"dataset.tokenizer.vocab", "dataset.tokenizer.merges", "dataset.tokenizer.file"};
    const char *path[3] = {s->dataset.tokenizer_vocab, s->dataset.tokenizer_merges, s->dataset.tokenizer_file};
    for (int i = 0; i < 3; i++)
        if (path[i][0] && coord_data_path_allowed(c, field[i], path[i], err, errlen) != 0) return -1;
    return 0;
}


/* A built-in data set (format idx or cifar) is read from where the catalog finds it
 * (catalog_dataset_locate over the data roots: the rule GET /api/v1/datasets shows), and
 * the stored spec says so: its dataset.path is filled in, absolute, so that the workers
 * (started in another directory, on other hosts of a shared file system) read what the
 * listing showed, and one that is absent is refused now (422 naming every place tried
 * and how to add it) instead of a job that fails at its start. A dataset.path the spec
 * gives must lie under a data root (400, data_path_allowed) and hold the set's files
 * (422). A retry (again) resolves anew when its stored path no longer passes: the
 * daemon may have been restarted with other --data-root directories, or the files
 * moved. s is the daemon's own copy; a user's data set is left to dataset_usable. */
static int builtin_dataset_place(const coordinator_t *c, job_spec_t *s, int again, char *err, size_t errlen)
{
    catalog_dataset_t d;
    if (spec_dataset_is_user(s) || catalog_dataset_get(s->dataset.name, &d) != 0 || catalog_format_is_user(d.format))
        return COORD_OK;
    const char *roots[COORD_DATA_ROOTS_MAX];
    int nroots = coord_data_roots_get(c, roots);
    char found[PATH_MAX], looked[1024];
    int located = catalog_dataset_locate(&d, roots, nroots, found, sizeof found, looked, sizeof looked) == 0;
    if (s->dataset.path[0]) {
        /* outside the data roots first (400), so that the answer never says what such
         * a path holds; then the files (422) */
        char why[768];
        int code = COORD_OK;
        if (data_path_allowed(c, s->dataset.path, why, sizeof why) != 0) {
            code = COORD_EINVAL;
        } else if (!catalog_dataset_present(&d, s->dataset.path)) {
            code = COORD_EDATA;
            snprintf(why, sizeof why, "dataset.path: %.300s does not hold the files of dataset.name %s",
                     s->dataset.path, d.name);
        }
        if (code == COORD_OK) return COORD_OK;
        if (!again) {
            errmsg(err, errlen, "%s", why);
            return code;
        }
        s->dataset.path[0] = '\0'; /* a retry: where the catalog finds it now */
    }
    if (located && strlen(found) < sizeof s->dataset.path) {
        snprintf(s->dataset.path, sizeof s->dataset.path, "%s", found);
        return COORD_OK;
    }
    /* how to add it: its files, each raw or gzipped, in its directory */
    char files[512] = "";
    size_t k = 0;
    for (int split = 0; split < 2; split++) {
        int n = split ? d.ntest : d.ntrain;
        for (int i = 0; i < n && k < sizeof files; i++) {
            int w = snprintf(files + k, sizeof files - k, "%s%s", k ? ", " : "",
                             split ? d.test_files[i] : d.train_files[i]);
            if (w > 0) k += (size_t)w;
        }
    }
    errmsg(err, errlen,
           "dataset.name: %s is not on this machine: looked in %s; add its files (%.400s; each may be gzipped) "
           "to %s/ under a data root (--data-root DIR)%s (docs/JOB_SPEC.md, \"Built-in data sets\")",
           d.name, looked[0] ? looked : "no place", files, d.dir,
           d.fixed_dir[0] ? "" : " or under $PACER_SHARED/datasets");
    return COORD_EDATA;
}

/* A text data set read by a BPE tokenizer: its files are read now, as the workers will
 * (common/tokenizer.h: the data roots' checked open, bounded, never waiting on a FIFO), so
 * that one that does not load is refused by name (422) instead of a job that fails at its
 * start, and a GPT whose model.gpt.vocab_size exceeds the tokenizer's vocabulary (its
 * samples could be ids nothing decodes) is refused now, not at its first generation. */
static int tokenizer_usable(const job_spec_t *s, char *err, size_t errlen)
{
    if (strcmp(s->dataset.tokenizer, "bpe") != 0) return COORD_OK;
    char why[1024];
    tokenizer_t *t = tokenizer_for_dataset("bpe", s->dataset.path, s->dataset.tokenizer_vocab,
                                           s->dataset.tokenizer_merges, s->dataset.tokenizer_file, why, sizeof why);
    if (!t) {
        errmsg(err, errlen, "dataset.tokenizer: %s", why);
        return COORD_EDATA;
    }
    const int n = tokenizer_vocab_size(t);
    tokenizer_free(t);
    if (spec_model_is_gpt(s) && s->gpt.vocab_size > n) {
        errmsg(err, errlen,
               "model.gpt.vocab_size: %d, more than the %d ids of the data set's BPE tokenizer: the model would "
               "sample ids nothing decodes; leave it out (the tokenizer's) or give at most %d",
               s->gpt.vocab_size, n, n);
        return COORD_EDATA;
    }
    return COORD_OK;
}

/* A user's data set (dataset.format imagefolder or npz), probed before the job is queued
 * (common/dsprobe.h: the folder listed, the .npz's headers and labels read; no image is
 * decoded; a BPE tokenizer's files read): what can be known now is refused now, 422 naming
 * dataset.path (or the tokenizer's file), instead of a job that fails at its start. Its
 * classes must be the outputs of a model of its own width (an imported one); a built-in's
 * head is sized to them. */
static int dataset_usable(const job_spec_t *s, char *err, size_t errlen)
{
    dsprobe_t p;
    char why[1024];
    if (dsprobe(spec_dataset_format(s), s->dataset.path, s->dataset.layout, &p, why, sizeof why) != 0) {
        errmsg(err, errlen, "dataset.path: %s", why);
        return COORD_EDATA;
    }
    const int rc = tokenizer_usable(s, err, errlen);
    if (rc != COORD_OK) return rc;
    catalog_model_t m;
    if (catalog_model_get(s->model, &m) == 0 && m.head_in == 0 && m.classes != p.classes) {
        errmsg(err, errlen, "dataset.path: %.300s has %d classes, model %s has %d outputs (one per class)",
               s->dataset.path, p.classes, s->model, m.classes);
        return COORD_EDATA;
    }
    return COORD_OK;
}

/* Memory admission: each host's ranks against its memory (hostmem.h: by-slot placement,
 * the local launcher's every rank here, a sharded job's ranks each for its own range).
 * A host of unknown memory (a hostfile's or Slurm's without --host-memory-mb or
 * --host-memory-mb-of) is not checked; a model or data set without an estimate (gone
 * from the catalog since the spec was parsed) does not fit. The host table is the tick's
 * (daemon.c's admission_hosts), copied here. */
static int memory_fits(coordinator_t *c, const job_spec_t *s, int world, char *err, size_t errlen)
{
    pthread_mutex_lock(&c->lock);
    const int n = c->hosts->nadmit;
    hostmem_host_t *hosts = n > 0 ? malloc((size_t)n * sizeof *hosts) : NULL;
    if (hosts) memcpy(hosts, c->hosts->admit, (size_t)n * sizeof *hosts);
    pthread_mutex_unlock(&c->lock);
    if (n > 0 && !hosts) {
        errmsg(err, errlen, "out of memory");
        return 0;
    }
    int ok = hostmem_fits(s, world, hosts, n, launcher_kind(c->launcher) == LAUNCHER_LOCAL, err, errlen);
    /* The hostfile launcher writes the attempt's hostfile in the order run_launch.c chooses: a
     * list of weights whose large shares do not fit where the hostfile's order puts them
     * is launched with the hosts reordered (hostmem_order), and admitted when that fits. */
    int *order = !ok && n > 0 && launcher_kind(c->launcher) == LAUNCHER_HOSTFILE ? malloc((size_t)n * sizeof *order)
                                                                                 : NULL;
    if (order && hostmem_order(s, world, hosts, n, order) == 2) ok = 1;
    free(order);
    free(hosts);
    return ok;
}

/* Platform files only from the daemon's platform directory (simjob.h); checked on a copy:
 * the job keeps the paths as written, the launch resolves them again. A client
 * (coordinator_open) does not know the daemon's directory: its launch refuses such a job
 * then, with the same message as its reason. */
static int check_sim_platform(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!a->spec->simulate.enabled || !c->daemon) return COORD_OK;
    job_spec_t *chk = malloc(sizeof *chk);
    if (!chk) return errmsg(err, errlen, "out of memory"), COORD_EINTERNAL;
    *chk = *a->spec;
    char why[512];
    int bad = simjob_resolve(c->sim_platforms, chk, why, sizeof why);
    free(chk);
    if (!bad) return COORD_OK;
    errmsg(err, errlen, "%s", why);
    return COORD_EINVAL;
}

static int check_data_root(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    const job_spec_t *s = a->spec;
    if (!c->daemon || !spec_dataset_is_user(s) || !s->dataset.path[0]) return COORD_OK;
    return data_path_allowed(c, s->dataset.path, err, errlen) != 0 ? COORD_EINVAL : COORD_OK;
}

static int check_tokenizer_root(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon) return COORD_OK;
    return tokenizer_paths_allowed(c, a->spec, err, errlen) != 0 ? COORD_EINVAL : COORD_OK;
}

/* Where workers write is the daemon's to say (--data-cache-dir): a client must not make
 * them create files elsewhere. */
static int check_cache_dir(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon || !a->spec->dataset.cache_dir[0]) return COORD_OK;
    errmsg(err, errlen,
           "dataset.cache_dir: set by the coordinator (--data-cache-dir), not by a submitted spec; "
           "leave it out");
    return COORD_EINVAL;
}

static int check_user_dataset(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon || !spec_dataset_is_user(a->spec)) return COORD_OK;
    return dataset_usable(a->spec, err, errlen);
}

/* freeze and lora.targets: each glob must match a parameter of the model (lora.targets a
 * matrix product's weight), as the worker requires at its start (worker/init_weights.c,
 * model/lora.c), so that a glob that matches nothing is refused now by name (400), as
 * PEFT's get_peft_model refuses a target module it does not find. The names are those
 * the coordinator knows (common/param_names.h): a built-in's, or an uploaded model's as
 * its validator listed them (modelstore.h; the daemon's only). A model whose names are
 * not known (one uploaded before its names were recorded, until the daemon's next start
 * lists them) is left to the worker. */
static int check_param_globs(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    const job_spec_t *s = a->spec;
    if (!s->freeze[0] && !s->lora.targets[0]) return COORD_OK;
    param_names_t p;
    int known = param_names_builtin(s, &p);
    catalog_model_t m;
    if (known == 0 && c->daemon && catalog_model_get(s->model, &m) == 0 && m.source == CATALOG_UPLOADED)
        known = modelstore_param_names(c, s->model_sha256[0] ? s->model_sha256 : m.sha256, &p);
    if (known < 0) return errmsg(err, errlen, "out of memory"), COORD_EINTERNAL;
    if (known == 0) return COORD_OK;
    const int bad = param_names_check(s, &p, s->model, err, errlen);
    param_names_free(&p);
    return bad ? COORD_EINVAL : COORD_OK;
}

/* Only the daemon knows its slots (0 in coordinator_open's CLI mode, where the daemon's
 * scheduler still runs it alone, oversubscribed). A simulated job's ranks are simulated
 * hosts inside one pacer-sim process (one of --sim-slots), not ranks on the launcher's
 * slots: its size is not counted here. */
static int counts_slots(const coordinator_t *c, const admission_t *a)
{
    return c->hosts->slots_total > 0 && !a->spec->simulate.enabled;
}

/* More ranks than the slots times the oversubscription factor could never run (or would
 * run hundreds of ranks to a core). */
static int check_slots(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    const job_spec_t *s = a->spec;
    if (!counts_slots(c, a) || a->world <= c->hosts->slots_total * c->cfg.oversubscribe) return COORD_OK;
    errmsg(err, errlen,
           "workers: %d ranks (world %d) do not fit the cluster's %d slot%s times the "
           "oversubscription factor %g (--oversubscribe-factor): at most %d",
           s->workers, a->world, c->hosts->slots_total, c->hosts->slots_total == 1 ? "" : "s", c->cfg.oversubscribe,
           (int)(c->hosts->slots_total * c->cfg.oversubscribe) - (a->world - s->workers));
    return COORD_ENOFIT;
}

/* More ranks than slots: accepted with a warning (said now and on the job's page), or
 * refused where the operator asked (--refuse-oversubscribed). */
static int check_oversubscribed(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!counts_slots(c, a) || !policy_oversubscribed(a->world, c->hosts->slots_total, a->oversub, sizeof a->oversub) ||
        !c->cfg.refuse_oversubscribed)
        return COORD_OK;
    errmsg(err, errlen,
           "workers: %s; this coordinator refuses oversubscribed jobs (--refuse-oversubscribed): at most %d "
           "workers",
           a->oversub, c->hosts->slots_total - (a->world - a->spec->workers));
    return COORD_ENOFIT;
}

static int check_memory(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon || a->spec->simulate.enabled) return COORD_OK;
    return memory_fits(c, a->spec, a->world, err, errlen) ? COORD_OK : COORD_ENOFIT;
}

/* The daemon's copy of the spec, which the placing checks fill in. */
static job_spec_t *placed_copy(admission_t *a)
{
    if (!a->placed && (a->placed = malloc(sizeof *a->placed))) *a->placed = *a->spec;
    return a->placed;
}

/* A built-in data set's place goes into the stored spec (the daemon's copy): after the
 * fits, which need no disk, so that a job that cannot fit says so first. */
static int check_dataset_place(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon) return COORD_OK;
    job_spec_t *own = placed_copy(a);
    if (!own) return errmsg(err, errlen, "out of memory"), COORD_EINTERNAL;
    return builtin_dataset_place(c, own, a->again, err, errlen);
}

static int check_init(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    if (!c->daemon) return COORD_OK;
    job_spec_t *own = placed_copy(a);
    if (!own) return errmsg(err, errlen, "out of memory"), COORD_EINTERNAL;
    return init_place(c, own, err, errlen);
}

typedef struct {
    const char *name;
    int (*check)(coordinator_t *c, admission_t *a, char *err, size_t errlen);
} admission_check_t;

/* In this order: what the client may not name first (400), then what cannot fit (409),
 * then what needs the disk (422). */
static const admission_check_t CHECKS[] = {
    {"simulate-platform", check_sim_platform},
    {"data-root", check_data_root},
    {"tokenizer-root", check_tokenizer_root},
    {"cache-dir", check_cache_dir},
    {"param-globs", check_param_globs},
    {"user-dataset", check_user_dataset},
    {"slots", check_slots},
    {"oversubscribed", check_oversubscribed},
    {"memory", check_memory},
    {"dataset-place", check_dataset_place},
    {"init", check_init},
};
#define NCHECKS (sizeof CHECKS / sizeof CHECKS[0])

size_t admission_count(void) { return NCHECKS; }

const char *admission_name(size_t i) { return i < NCHECKS ? CHECKS[i].name : NULL; }

int admission_run(coordinator_t *c, admission_t *a, char *err, size_t errlen)
{
    a->oversub[0] = 0;
    a->refused_by = NULL;
    for (size_t i = 0; i < NCHECKS; i++) {
        const int code = CHECKS[i].check(c, a, err, errlen);
        if (code != COORD_OK) {
            a->refused_by = CHECKS[i].name;
            return code;
        }
    }
    return COORD_OK;
}
