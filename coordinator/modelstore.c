/* coordinator/modelstore.c - see modelstore.h; coord_model_put and coord_model_delete
 * (coordinator.h) are the API's side. */
#include "modelstore.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "coord_internal.h"
#include "errmsg.h"
#include "fs.h"
#include "hosts.h"
#include "jobstore.h"
#include "jsonbody.h"
#include "launch.h"
#include "quotas.h"
#include "memest.h"
#include "param_names.h"
#include "redis_keys.h"
#include "sha256.h"
#include "tickconn.h"

#define INDEX_MAX_BYTES (4 << 20) /* CATALOG_ADDED_MAX entries of a few hundred bytes */
/* The validator's output: one JSON line, or its message. Its parameter names are within
 * param_names.h's bounds: each name's bytes at most twice over in JSON (an escaped '"' or
 * '\\') with its quotes and comma, and each index of product_weights in a few digits. */
#define CHECK_OUT_MAX (8192 + 2 * PARAM_NAMES_BYTES + 8 * PARAM_NAMES_MAX)
#define NAMES_SUFFIX ".params.json" /* STATE_DIR/models/<sha256>.params.json: its names */

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;

/* When each uploaded name's current model was stored (clock_mono_s; names stored since
 * start), under store_lock: an upload that began before it could not have seen it, and
 * gets 409 instead of replacing it (coord_model_put's since). */
static struct {
    char name[CATALOG_NAME_MAX];
    double at;
} upload_times[CATALOG_ADDED_MAX];
static int nupload_times;

static double stored_at(const char *name)
{
    for (int i = 0; i < nupload_times; i++)
        if (strcmp(upload_times[i].name, name) == 0) return upload_times[i].at;
    return 0;
}

/* at > 0: name stored then; 0: name gone. */
static void stored_set(const char *name, double at)
{
    int i = 0;
    while (i < nupload_times && strcmp(upload_times[i].name, name) != 0) i++;
    if (at <= 0) {
        if (i < nupload_times) upload_times[i] = upload_times[--nupload_times];
        return;
    }
    if (i == nupload_times && nupload_times == CATALOG_ADDED_MAX) return; /* the catalog holds no more */
    if (i == nupload_times) nupload_times++;
    snprintf(upload_times[i].name, sizeof upload_times[i].name, "%s", name);
    upload_times[i].at = at;
}

void modelstore_dir(const coordinator_t *c, char *out, size_t len) { snprintf(out, len, "%s/models", c->state_dir); }

static void content_path(const coordinator_t *c, const char *sha, char *out, size_t len)
{
    snprintf(out, len, "%s/models/%s.onnx", c->state_dir, sha);
}

/* Where sha's parameter names are kept: beside its bytes, as they are its content's. */
static void names_path(const coordinator_t *c, const char *sha, char *out, size_t len)
{
    snprintf(out, len, "%s/models/%s" NAMES_SUFFIX, c->state_dir, sha);
}

/* sha's names, written before the index names the model (so that an indexed model has
 * them unless it was uploaded before they were recorded): 0, or -1 logged. */
static int names_write(const coordinator_t *c, const char *sha, const param_names_t *p)
{
    char path[PATH_MAX + 128];
    names_path(c, sha, path, sizeof path);
    json_t *j = param_names_json(p);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    int rc = text ? fs_atomic_write_fixed(path, text, strlen(text), 0644) : -1;
    if (rc != 0) clog_printf("models: cannot write %s: %s", path, text ? strerror(errno) : "out of memory");
    free(text);
    return rc;
}

int modelstore_param_names(const coordinator_t *c, const char *sha, param_names_t *out)
{
    memset(out, 0, sizeof *out);
    if (!sha256_hex_valid(sha)) return 0;
    char path[PATH_MAX + 128];
    names_path(c, sha, path, sizeof path);
    FILE *f = fopen(path, "rb");
    if (!f) return 0; /* uploaded before the names were recorded, or beyond their bounds */
    char *text = malloc(CHECK_OUT_MAX);
    size_t n = text ? fread(text, 1, CHECK_OUT_MAX, f) : 0;
    fclose(f);
    json_error_t je;
    json_t *j = text && n < CHECK_OUT_MAX ? json_loadb(text, n, 0, &je) : NULL;
    free(text);
    char err[256] = "";
    int rc = j ? param_names_from_json(j, out, err, sizeof err) : -1;
    json_decref(j);
    if (rc < 0)
        clog_printf("models: %s: %s; freeze and lora.targets are left to the worker", path,
                    err[0] ? err : "not the names' JSON, or larger than their bound");
    return rc < 0 ? 0 : rc;
}

/* ---- the entry ---------------------------------------------------------------------------- */

/* An uploaded model's name is a catalog name: catalog_name_valid refuses "." and "..",
 * which are path segments (a client or proxy that normalises /api/v1/models/.. would send
 * another request than the one meant, and a name must never read as a directory). */

/* An integer member in [lo, hi]: 0, or -1 with err. */
static int get_long(const json_t *j, const char *key, long lo, long hi, long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(j, key);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return errmsg(err, errlen, "%s: must be an integer from %ld to %ld", key, lo, hi);
    *out = (long)json_integer_value(v);
    return 0;
}

/* The catalog entry of an index entry or of `pacer-worker --check-onnx`'s line: name (when
 * name_given is NULL, the entry's "name"), "sha256" (64 hex digits), "input" [C, H, W],
 * "classes", "layers", "parameters", "buffers", "fixed", "activations_per_sample",
 * "argmax_per_sample", "flops_per_sample"; "title" optional, and
 * "activation_gradients_per_sample" (an index written before it was a field lacks it: the
 * activations' figure then, an upper bound). Source uploaded. Every value
 * is checked for its type and range here, and catalog_model_add checks the figures again.
 * 0, or -1 with err naming the field. */
static int modelstore_entry_parse(const json_t *j, const char *name_given, catalog_model_t *out, char *err,
                                  size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!json_is_object(j)) return errmsg(err, errlen, "a model entry must be an object");
    const char *name = name_given ? name_given : json_string_value(json_object_get(j, "name"));
    if (!catalog_name_valid(name)) return errmsg(err, errlen, "name: must be " CATALOG_NAME_RULE, CATALOG_NAME_MAX - 1);
    snprintf(out->name, sizeof out->name, "%s", name);
    const char *sha = json_string_value(json_object_get(j, "sha256"));
    if (!sha256_hex_valid(sha)) return errmsg(err, errlen, "sha256: must be 64 lower-case hex digits");
    snprintf(out->sha256, sizeof out->sha256, "%s", sha);
    const char *title = json_string_value(json_object_get(j, "title"));
    snprintf(out->title, sizeof out->title, "%.*s", (int)sizeof out->title - 1, title ? title : name);
    json_t *in = json_object_get(j, "input");
    if (!json_is_array(in) || json_array_size(in) != 3) return errmsg(err, errlen, "input: must be [C, H, W]");
    int dims[3];
    for (size_t i = 0; i < 3; i++) {
        json_t *d = json_array_get(in, i);
        if (!json_is_integer(d) || json_integer_value(d) < 1 || json_integer_value(d) > (1 << 20))
            return errmsg(err, errlen, "input: must be [C, H, W], each from 1 to %d", 1 << 20);
        dims[i] = (int)json_integer_value(d);
    }
    out->C = dims[0], out->H = dims[1], out->W = dims[2];
    const long BIG = 1L << 40;
    long classes = 0, layers = 0;
    if (get_long(j, "classes", 1, 1 << 24, &classes, err, errlen) ||
        get_long(j, "layers", 1, 1 << 20, &layers, err, errlen) ||
        get_long(j, "parameters", 1, BIG, &out->params, err, errlen) ||
        get_long(j, "buffers", 0, BIG, &out->buffers, err, errlen) ||
        get_long(j, "fixed", 0, BIG, &out->fixed, err, errlen) ||
        get_long(j, "activations_per_sample", 1, BIG, &out->acts_per_sample, err, errlen) ||
        get_long(j, "argmax_per_sample", 0, BIG, &out->argmax_per_sample, err, errlen))
        return -1;
    out->dacts_per_sample = out->acts_per_sample;
    if (json_object_get(j, "activation_gradients_per_sample") &&
        get_long(j, "activation_gradients_per_sample", 1, BIG, &out->dacts_per_sample, err, errlen))
        return -1;
    out->classes = (int)classes;
    out->layers = (int)layers;
    json_t *f = json_object_get(j, "flops_per_sample");
    if (!json_is_number(f) || !(json_number_value(f) > 0) || json_number_value(f) > 1e18)
        return errmsg(err, errlen, "flops_per_sample: must be a number in (0, 1e18]");
    out->flops_per_sample = json_number_value(f);
    out->source = CATALOG_UPLOADED;
    return 0;
}

int modelstore_index_parse(const char *text, size_t len, catalog_model_t *out, int max, char *err, size_t errlen)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) return errmsg(err, errlen, "not JSON: %s (line %d)", jsonbody_text(&je), je.line);
    json_t *list = json_object_get(root, "models");
    int n = -1;
    if (!json_is_array(list)) {
        errmsg(err, errlen, "must be {\"models\": [...]}");
    } else if (json_array_size(list) > (size_t)max) {
        errmsg(err, errlen, "%zu models; at most %d", json_array_size(list), max);
    } else {
        n = 0;
        char why[256];
        for (size_t i = 0; i < json_array_size(list); i++, n++) {
            if (modelstore_entry_parse(json_array_get(list, i), NULL, &out[n], why, sizeof why) != 0) {
                errmsg(err, errlen, "models[%zu]: %s", i, why);
                n = -1;
                break;
            }
            for (int k = 0; k < n; k++)
                if (strcmp(out[k].name, out[n].name) == 0) {
                    errmsg(err, errlen, "models[%zu]: %s is there twice", i, out[n].name);
                    n = -1;
                    break;
                }
            if (n < 0) break;
        }
    }
    json_decref(root);
    return n;
}

static json_t *entry_json(const catalog_model_t *m)
{
    return json_pack("{s:s, s:s, s:s, s:[i,i,i], s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "name", m->name,
                     "title", m->title, "sha256", m->sha256, "input", m->C, m->H, m->W, "classes", m->classes, "layers",
                     m->layers, "parameters", (json_int_t)m->params, "buffers", (json_int_t)m->buffers, "fixed",
                     (json_int_t)m->fixed, "activations_per_sample", (json_int_t)m->acts_per_sample,
                     "activation_gradients_per_sample", (json_int_t)m->dacts_per_sample, "argmax_per_sample",
                     (json_int_t)m->argmax_per_sample, "flops_per_sample", m->flops_per_sample);
}

/* The index from the catalog's uploaded entries, rewritten whole. Called under store_lock. */
static int index_write(const coordinator_t *c)
{
    json_t *list = json_array();
    catalog_model_t m;
    for (size_t i = 0; list && catalog_model_at(i, &m) == 0; i++)
        if (m.source == CATALOG_UPLOADED) json_array_append_new(list, entry_json(&m));
    json_t *root = list ? json_pack("{s:i, s:o}", "version", 1, "models", list) : NULL;
    char *text = root ? json_dumps(root, JSON_INDENT(1)) : NULL;
    json_decref(root);
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/models/index.json", c->state_dir);
    int rc = text ? fs_atomic_write_fixed(path, text, strlen(text), 0644) : -1;
    if (rc != 0) clog_printf("models: cannot write %s: %s", path, text ? strerror(errno) : "out of memory");
    free(text);
    return rc;
}

/* ---- Redis -------------------------------------------------------------------------------- */

/* SET (or, with only_missing, SET NX) the bytes under KEY_MODEL: 0, or -1. */
static int redis_put(redisContext *rc, const char *sha, const void *data, size_t len, int only_missing)
{
    char key[128];
    snprintf(key, sizeof key, KEY_MODEL, sha);
    redisReply *r = only_missing ? redisCommand(rc, "SET %s %b NX", key, data, len)
                                 : redisCommand(rc, "SET %s %b", key, data, len);
    int ok = reply_ok(r);
    if (r) freeReplyObject(r);
    return ok ? 0 : -1;
}

static void redis_del(redisContext *rc, const char *sha)
{
    char key[128];
    snprintf(key, sizeof key, KEY_MODEL, sha);
    redisReply *r = redisCommand(rc, "DEL %s", key);
    if (r) freeReplyObject(r);
}

/* Whether the spec text (a job record's "spec") names model name: {"onnx": name, ...}. */
static int spec_names(const char *text, const char *name)
{
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    json_t *m = json_object_get(j, "model");
    const char *onnx = json_string_value(json_object_get(m, "onnx"));
    int yes = onnx && strcmp(onnx, name) == 0;
    json_decref(j);
    return yes;
}

/* The queued or running job that uses name: 1 with its id in job, 0 none, -1 Redis failed. */
static int in_use(redisContext *rc, const char *name, char *job, size_t joblen)
{
    redisReply *q = redisCommand(rc, "LRANGE %s 0 -1", KEY_QUEUE);
    redisReply *a = q ? redisCommand(rc, "SMEMBERS %s", KEY_ACTIVE) : NULL;
    int found = (!q || !a || q->type != REDIS_REPLY_ARRAY || a->type != REDIS_REPLY_ARRAY) ? -1 : 0;
    for (int pass = 0; found == 0 && pass < 2; pass++) {
        redisReply *ids = pass ? a : q;
        for (size_t i = 0; found == 0 && i < ids->elements; i++) {
            const char *id = reply_str(ids->element[i]);
            if (!id || !job_id_valid(id)) continue;
            char key[160];
            snprintf(key, sizeof key, KEY_JOB, id);
            redisReply *s = redisCommand(rc, "HGET %s spec", key);
            if (!s) found = -1;
            else if (spec_names(reply_str(s), name)) found = 1, snprintf(job, joblen, "%s", id);
            if (s) freeReplyObject(s);
        }
    }
    if (q) freeReplyObject(q);
    if (a) freeReplyObject(a);
    return found;
}

/* ---- start -------------------------------------------------------------------------------- */

/* Removes the files of models/ that no index entry names: a content file SHA256.onnx left
 * by a crash between its write and the index's (an upload being validated), and
 * fs_atomic_write_fixed's temporary files (*.tmp). Each removal is logged. With an index that
 * could not be read (k < 0) only the temporary files go: the content files may be named by
 * it. Runs at start, before the API takes uploads. */
static void sweep(const coordinator_t *c, const catalog_model_t *entries, int k)
{
    char dir[PATH_MAX + 16];
    modelstore_dir(c, dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d) return; /* nothing uploaded yet */
    pthread_mutex_lock(&store_lock);
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        const size_t len = strlen(n);
        const int tmp = len > 4 && strcmp(n + len - 4, ".tmp") == 0;
        char sha[SHA256_HEX_LEN + 1] = "";
        if ((len == SHA256_HEX_LEN + 5 && strcmp(n + SHA256_HEX_LEN, ".onnx") == 0) ||
            (len == SHA256_HEX_LEN + strlen(NAMES_SUFFIX) && strcmp(n + SHA256_HEX_LEN, NAMES_SUFFIX) == 0))
            snprintf(sha, sizeof sha, "%.*s", SHA256_HEX_LEN, n);
        const int content = k >= 0 && sha256_hex_valid(sha);
        int named = 0;
        for (int i = 0; content && i < k; i++) named |= strcmp(entries[i].sha256, sha) == 0;
        if (!tmp && (!content || named)) continue;
        if (unlinkat(dirfd(d), n, 0) == 0)
            clog_printf("models: removed %s/%s (%s)", dir, n,
                        tmp ? "a temporary file" : "no index entry names it: an upload that did not finish");
        else clog_printf("models: cannot remove %s/%s: %s", dir, n, strerror(errno));
    }
    pthread_mutex_unlock(&store_lock);
    closedir(d);
}

static int check_file(coordinator_t *c, const char *file, const char *name, catalog_model_t *m, param_names_t *names,
                      char *err, size_t errlen);

/* An upload from before its parameter names were kept: validated again (pacer-worker
 * --check-onnx, as an upload is) for its names, written beside it so that admission checks
 * freeze and lora.targets against them from now on; once, at the first start that finds
 * it without them (a model whose names exceed their bounds gets an empty list, which
 * admission reads as not known, as at upload). */
static void backfill_names(coordinator_t *c, const catalog_model_t *e, const char *file)
{
    char path[PATH_MAX + 128], err[512];
    names_path(c, e->sha256, path, sizeof path);
    if (access(path, F_OK) == 0) return;
    catalog_model_t m;
    param_names_t names;
    memset(&names, 0, sizeof names);
    if (check_file(c, file, e->name, &m, &names, err, sizeof err) != COORD_OK) {
        clog_printf("models: %s: its parameter names could not be listed (%s); freeze and lora.targets are left "
                    "to the worker",
                    e->name, err);
        return;
    }
    if (names_write(c, e->sha256, &names) == 0)
        clog_printf("models: %s: its %zu parameter names recorded (uploaded before they were kept)", e->name, names.n);
    param_names_free(&names);
}

void modelstore_start(coordinator_t *c)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/models/index.json", c->state_dir);
    static catalog_model_t entries[CATALOG_ADDED_MAX];
    FILE *f = fopen(path, "rb");
    if (!f) {
        /* no index: every content file is unnamed; an index that cannot be opened keeps them */
        const int e = errno;
        if (e != ENOENT) clog_printf("models: %s: %s; uploaded models are not in the catalog", path, strerror(e));
        sweep(c, entries, e == ENOENT ? 0 : -1);
        return;
    }
    char *text = malloc(INDEX_MAX_BYTES);
    size_t n = text ? fread(text, 1, INDEX_MAX_BYTES, f) : 0;
    fclose(f);
    char err[512];
    int k = text ? modelstore_index_parse(text, n, entries, CATALOG_ADDED_MAX, err, sizeof err) : -1;
    free(text);
    sweep(c, entries, k);
    if (k < 0) {
        clog_printf("models: %s: %s; uploaded models are not in the catalog", path, text ? err : "out of memory");
        return;
    }
    int added = 0;
    for (int i = 0; i < k; i++) {
        char file[PATH_MAX + 128];
        content_path(c, entries[i].sha256, file, sizeof file);
        if (access(file, R_OK) != 0) {
            clog_printf("models: %s: %s: %s; left out", entries[i].name, file, strerror(errno));
            continue;
        }
        if (catalog_model_add(&entries[i], err, sizeof err) != 0) {
            clog_printf("models: %s", err);
            continue;
        }
        added++;
        backfill_names(c, &entries[i], file);
        /* The bytes for ranks without this state directory, unless Redis has them. */
        if (!c->conn->rc) continue;
        char *data = NULL;
        size_t len = 0;
        FILE *mf = fopen(file, "rb");
        struct stat st;
        if (mf && fstat(fileno(mf), &st) == 0 && st.st_size > 0 && (data = malloc((size_t)st.st_size)))
            len = fread(data, 1, (size_t)st.st_size, mf);
        if (mf) fclose(mf);
        if (!data || len != (size_t)st.st_size || redis_put(c->conn->rc, entries[i].sha256, data, len, 1) != 0)
            clog_printf("models: %s: its bytes could not be put in Redis", entries[i].name);
        free(data);
    }
    if (added) clog_printf("models: %d uploaded model%s from %s", added, added == 1 ? "" : "s", path);
}

/* ---- the API ------------------------------------------------------------------------------ */

/* The upload's answer: the summary the Python client reads. */
static json_t *summary_json(const catalog_model_t *m, size_t bytes)
{
    return json_pack("{s:s, s:s, s:s, s:s, s:[i,i,i], s:i, s:i, s:I, s:I, s:f, s:I}", "name", m->name, "title",
                     m->title, "source", catalog_source_name(m->source), "sha256", m->sha256, "input", m->C, m->H, m->W,
                     "classes", m->classes, "layers", m->layers, "parameters", (json_int_t)m->params, "buffers",
                     (json_int_t)m->buffers, "flops_per_sample", m->flops_per_sample, "bytes", (json_int_t)bytes);
}

/* Whether another uploaded name than skip still points at sha (its file stays). */
static int sha_referenced(const char *sha, const char *skip)
{
    catalog_model_t m;
    for (size_t i = 0; catalog_model_at(i, &m) == 0; i++)
        if (m.source == CATALOG_UPLOADED && strcmp(m.sha256, sha) == 0 && strcmp(m.name, skip) != 0) return 1;
    return 0;
}

/* Drops sha's file and Redis key unless another name keeps them. Under store_lock. */
static void drop_bytes(coordinator_t *c, redisContext *rc, const char *sha, const char *name)
{
    if (sha_referenced(sha, name)) return;
    char file[PATH_MAX + 128];
    content_path(c, sha, file, sizeof file);
    unlink(file);
    names_path(c, sha, file, sizeof file);
    unlink(file);
    if (rc) redis_del(rc, sha);
}

/* The validator's memory bound, MiB: the memory of a host the ranks run on (the daemon's
 * --host-memory-mb, else MemTotal: what a job's admission uses), at most half of this
 * machine's, where the validator runs beside the daemon. A model that needs more at batch
 * 1 cannot train anywhere the daemon sends it. */
static long check_memory_mb(const coordinator_t *c)
{
    double here = memest_meminfo("MemTotal") / 2, host = c->hosts->memory;
    double bytes = host > 0 && (here <= 0 || host < here) ? host : here;
    long mb = bytes > 0 ? (long)(bytes / (1 << 20)) : MODELSTORE_CHECK_DEFAULT_MB;
    return mb < 64 ? 64 : mb;
}

/* Validates the file with pacer-worker --check-onnx into *m and *names (names->n 0: not
 * listed): COORD_OK, COORD_EINVAL (not ONNX), COORD_EDATA (refused, also when the validator
 * was killed: a file that crashes or outgrows it is refused, the daemon stays),
 * COORD_EINTERNAL (it could not run or answered nonsense); err says why. */
static int check_file(coordinator_t *c, const char *file, const char *name, catalog_model_t *m, param_names_t *names,
                      char *err, size_t errlen)
{
    char *out = malloc(CHECK_OUT_MAX);
    if (!out) return errmsg(err, errlen, "out of memory"), COORD_EINTERNAL;
    char mb[32];
    const long bound_mb = check_memory_mb(c);
    snprintf(mb, sizeof mb, "%ld", bound_mb);
    const char *argv[] = {c->worker, "--check-onnx", file, "--check-memory-mb", mb, NULL};
    int st = launch_capture(argv, out, CHECK_OUT_MAX, MODELSTORE_CHECK_TIMEOUT_S);
    /* one line: the JSON summary, or the importer's message without the program's name */
    char *nl = strchr(out, '\n');
    if (nl && st != 0) *nl = '\0';
    const char *msg = strncmp(out, "pacer-worker: ", 14) == 0 ? out + 14 : out;
    if (strncmp(msg, "onnx: ", 6) == 0) msg += 6;
    int code = COORD_OK;
    if (st == 0) {
        json_error_t je;
        json_t *j = json_loads(out, JSON_DISABLE_EOF_CHECK, &je);
        char why[256];
        if (!j || modelstore_entry_parse(j, name, m, why, sizeof why) != 0 ||
            param_names_from_json(j, names, why, sizeof why) < 0) {
            errmsg(err, errlen, "pacer-worker --check-onnx answered something else than a summary (%s)",
                   j ? why : jsonbody_text(&je));
            code = COORD_EINTERNAL;
        }
        json_decref(j);
    } else if (st == 2 || st == 3) {
        /* the stored file's path is the daemon's business, not the client's */
        const char *at = strstr(msg, file);
        if (at) errmsg(err, errlen, "%.*sthe upload%s", (int)(at - msg), msg, at + strlen(file));
        else errmsg(err, errlen, "%s", msg[0] ? msg : "refused without a message");
        code = st == 3 ? COORD_EINVAL : COORD_EDATA;
    } else if (st > 128) {
        errmsg(err, errlen,
               "the validator was stopped by signal %d (%s) importing the upload, within its bounds of %ld MiB and "
               "%.0f s: the model is refused",
               st - 128, strsignal(st - 128), bound_mb, MODELSTORE_CHECK_TIMEOUT_S);
        clog_printf("models: %s --check-onnx %s: killed by signal %d", c->worker, file, st - 128);
        code = COORD_EDATA;
    } else {
        errmsg(err, errlen, "the validator %s --check-onnx %s (status %d, at most %.0f s): %.300s", c->worker,
               st < 0 ? "could not run" : "failed", st, MODELSTORE_CHECK_TIMEOUT_S, msg);
        code = COORD_EINTERNAL;
    }
    free(out);
    return code;
}

/* Whether a new upload fits: the catalog's room for uploads (CATALOG_ADDED_MAX) and by's
 * models (max_models). COORD_OK, or COORD_ELIMIT / COORD_EUNAVAIL with err. Under
 * store_lock, so two uploads cannot take the last place together. */
static int upload_fits(coordinator_t *c, redisContext *rc, const coord_caller_t *by, char *err, size_t errlen)
{
    catalog_model_t m;
    int added = 0;
    for (size_t i = 0; catalog_model_at(i, &m) == 0; i++) added += m.source != CATALOG_BUILTIN;
    if (added >= CATALOG_ADDED_MAX)
        return errmsg(err, errlen,
                      "the catalog holds at most %d uploaded models and has %d: delete one first (DELETE "
                      "/api/v1/models/{name})",
                      CATALOG_ADDED_MAX, added),
               COORD_ELIMIT;
    user_limits_t lim;
    long owned = 0;
    if (!by || !by->user) return COORD_OK;
    if (coord_limits_of(c, by, &lim) != COORD_OK || (lim.max_models > 0 && quotas_models_owned(rc, by->user, &owned)))
        return errmsg(err, errlen, "Redis did not answer how many models %s owns", by->user), COORD_EUNAVAIL;
    if (lim.max_models > 0 && owned >= lim.max_models)
        return errmsg(err, errlen,
                      "max_models: %s may own at most %ld uploaded model%s and owns %ld: delete one first (DELETE "
                      "/api/v1/models/{name})",
                      by->user, lim.max_models, lim.max_models == 1 ? "" : "s", owned),
               COORD_ELIMIT;
    return COORD_OK;
}

/* Who owns name after its upload by by (created: a new name): the uploader of a new one, a
 * replacement keeps its owner (an admin's replacement of a model without one takes it).
 * Written under store_lock, so a later upload's count sees it. into owner ("" none). */
static void upload_owner(coordinator_t *c, redisContext *rc, const char *name, const coord_caller_t *by, int created,
                         char *owner, size_t len)
{
    owner[0] = 0;
    if (!created && coord_model_owner(c, name, owner, len) == COORD_OK && owner[0]) return;
    if (!by || !by->user) return;
    if (coord_model_owner_set(c, name, by->user) != COORD_OK) {
        clog_printf("models: %s: its owner %s was not recorded (Redis unreachable): only admins may change it", name,
                    by->user);
        return;
    }
    coord_owner_confirm(rc, KEY_MODEL_OWNERS, name, by->user);
    snprintf(owner, len, "%s", by->user);
}

/* The validated upload m (sha's bytes: data, len; the file was there before: had_file)
 * stored as name: Redis, the catalog (in place of had when exists), the index. COORD_OK,
 * or an error with err, every part undone and bytes that nothing names removed. Under
 * store_lock. */
static int store_upload(coordinator_t *c, redisContext *rc, const catalog_model_t *m, const catalog_model_t *had,
                        int exists, const void *data, size_t len, int had_file, char *err, size_t errlen)
{
    int code = COORD_OK;
    if (redis_put(rc, m->sha256, data, len, 0) != 0) {
        errmsg(err, errlen, "Redis did not store the model's bytes (%zu bytes)", len);
        code = COORD_EUNAVAIL;
    } else {
        if (exists) catalog_model_remove(m->name);
        if (catalog_model_add(m, err, errlen) != 0) {
            code = COORD_EINTERNAL;
        } else if (index_write(c) != 0) {
            errmsg(err, errlen, "the model index could not be written (the coordinator's log says why)");
            catalog_model_remove(m->name);
            code = COORD_EINTERNAL;
        }
        char ignored[256];
        if (code != COORD_OK && exists) catalog_model_add(had, ignored, sizeof ignored); /* the old one stays */
    }
    if (code != COORD_OK && !sha_referenced(m->sha256, "")) {
        /* neither a file nor Redis bytes that no name refers to */
        char file[PATH_MAX + 128];
        content_path(c, m->sha256, file, sizeof file);
        if (!had_file) unlink(file);
        names_path(c, m->sha256, file, sizeof file);
        if (!had_file) unlink(file);
        redis_del(rc, m->sha256);
    }
    return code;
}

int coord_model_put(coordinator_t *c, const char *name, const void *data, size_t len, const coord_caller_t *by,
                    double since, json_t **out, int *created, char *err, size_t errlen)
{
    *out = NULL;
    *created = 0;
    err[0] = '\0';
    if (!c->daemon || !c->worker[0])
        return errmsg(err, errlen, "models are uploaded through the daemon (it validates with pacer-worker)"),
               COORD_ESTATE;
    if (!catalog_name_valid(name))
        return errmsg(err, errlen, "not a model name: " CATALOG_NAME_RULE, CATALOG_NAME_MAX - 1), COORD_EINVAL;
    if (len == 0) return errmsg(err, errlen, "the body is empty: send the ONNX file's bytes"), COORD_EINVAL;
    char sha[SHA256_HEX_LEN + 1];
    sha256_hex(data, len, sha);
    char dir[PATH_MAX + 16], file[PATH_MAX + 128];
    modelstore_dir(c, dir, sizeof dir);
    content_path(c, sha, file, sizeof file);

    pthread_mutex_lock(&store_lock);
    /* The name as it is now, under the lock: an upload that waited for another's
     * validation sees what that one stored. */
    catalog_model_t had, m;
    param_names_t names = {0};
    int exists = catalog_model_get(name, &had) == 0, code = COORD_OK;
    redisContext *rc = jobstore_pool_get(c->pool, err, errlen);
    if (!rc) {
        code = COORD_EUNAVAIL;
        goto out;
    }
    if (exists && had.source != CATALOG_UPLOADED) {
        errmsg(err, errlen, "%s is a %s model; uploads take another name", name,
               had.source == CATALOG_BUILTIN ? "built-in" : catalog_source_name(had.source));
        code = COORD_ESTATE;
        goto out;
    }
    if (exists && since > 0 && stored_at(name) > since) {
        /* stored by a request that finished while this one was on its way: replacing what
         * it could not have seen is not this request's to do (nor, for a new name, was the
         * permission it was let in with) */
        errmsg(err, errlen, "%s was uploaded by another request while this one was on its way: PUT again to replace it",
               name);
        code = COORD_ESTATE;
        goto out;
    }
    code = exists ? COORD_OK : upload_fits(c, rc, by, err, errlen);
    if (code != COORD_OK) goto out;
    if (exists) {
        char job[JOB_ID_MAX] = "";
        int k = in_use(rc, name, job, sizeof job);
        if (k != 0) {
            if (k < 0) errmsg(err, errlen, "Redis did not answer which jobs use %s", name);
            else
                errmsg(err, errlen, "%s is used by job %s (queued or running): replace it when that job ends", name,
                       job);
            code = k < 0 ? COORD_EUNAVAIL : COORD_ESTATE;
            goto out;
        }
    }
    if (fs_mkdir_p(dir, 0755) != 0) {
        errmsg(err, errlen, "%s: %s", dir, strerror(errno));
        code = COORD_EINTERNAL;
        goto out;
    }
    int had_file = access(file, R_OK) == 0;
    if (!had_file && fs_atomic_write_fixed(file, data, len, 0644) != 0) {
        errmsg(err, errlen, "%s: %s", file, strerror(errno));
        code = COORD_EINTERNAL;
        goto out;
    }
    code = check_file(c, file, name, &m, &names, err, errlen);
    if (code == COORD_OK && strcmp(m.sha256, sha) != 0) {
        errmsg(err, errlen, "%s changed while it was validated", file);
        code = COORD_EINTERNAL;
    }
    if (code != COORD_OK) {
        /* an unused copy of refused bytes is not kept */
        if (!had_file && !sha_referenced(sha, "")) unlink(file);
        goto out;
    }
    snprintf(m.title, sizeof m.title, "%s", name);
    /* without its names a model is still stored: its globs are then the worker's to check */
    if (names.n > 0) names_write(c, sha, &names);
    code = store_upload(c, rc, &m, &had, exists, data, len, had_file, err, errlen);
    if (code != COORD_OK) goto out;
    if (exists && strcmp(had.sha256, sha) != 0) drop_bytes(c, rc, had.sha256, name);
    stored_set(name, clock_mono_s());
    *created = !exists;
    char owner[USER_OWNER_MAX + 1];
    upload_owner(c, rc, name, by, *created, owner, sizeof owner);
    *out = summary_json(&m, len);
    if (*out) json_object_set_new(*out, "owner", owner[0] ? json_string(owner) : json_null());
    if (!*out) code = COORD_EINTERNAL;
    clog_printf("models: %s %s (sha256 %.12s..., %zu bytes)", exists ? "replaced" : "uploaded", name, sha, len);
out:
    param_names_free(&names);
    if (rc) jobstore_pool_put(c->pool, rc, code == COORD_EUNAVAIL);
    pthread_mutex_unlock(&store_lock);
    return code;
}

int coord_model_delete(coordinator_t *c, const char *name, char *err, size_t errlen)
{
    err[0] = '\0';
    catalog_model_t m;
    if (!name || catalog_model_get(name, &m) != 0) return COORD_ENOTFOUND;
    if (m.source != CATALOG_UPLOADED)
        return errmsg(err, errlen, "%s is a %s model: only uploaded models are deleted", name,
                      m.source == CATALOG_BUILTIN ? "built-in" : catalog_source_name(m.source)),
               COORD_ESTATE;
    pthread_mutex_lock(&store_lock);
    int code = COORD_OK;
    redisContext *rc = jobstore_pool_get(c->pool, err, errlen);
    if (!rc) {
        code = COORD_EUNAVAIL;
        goto out;
    }
    char job[JOB_ID_MAX] = "";
    int k = in_use(rc, name, job, sizeof job);
    if (k != 0) {
        if (k < 0) errmsg(err, errlen, "Redis did not answer which jobs use %s", name);
        else errmsg(err, errlen, "%s is used by job %s (queued or running): delete it when that job ends", name, job);
        code = k < 0 ? COORD_EUNAVAIL : COORD_ESTATE;
        goto out;
    }
    if (catalog_model_remove(name) != 0) {
        code = COORD_ENOTFOUND; /* deleted meanwhile */
        goto out;
    }
    if (index_write(c) != 0) {
        catalog_model_add(&m, err, errlen);
        errmsg(err, errlen, "the model index could not be written (the coordinator's log says why)");
        code = COORD_EINTERNAL;
        goto out;
    }
    drop_bytes(c, rc, m.sha256, name);
    /* under the lock: a later upload of the name is its own uploader's */
    coord_model_owner_set(c, name, NULL);
    stored_set(name, 0);
    clog_printf("models: deleted %s (sha256 %.12s...)", name, m.sha256);
out:
    if (rc) jobstore_pool_put(c->pool, rc, code == COORD_EUNAVAIL);
    pthread_mutex_unlock(&store_lock);
    return code;
}
