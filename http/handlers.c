/* http/handlers.c - one function per endpoint; see routes.c for the table and
 * docs/openapi.json for the contract. Handlers validate the query, call the coordinator
 * API (coordinator.h: thread-safe, one Redis round trip or so per call) and answer once
 * through respond.h. A coordinator error becomes its problem document (respond.c).
 */
#include "handlers.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "http_internal.h"
#include "jobfile.h"
#include "jobstore.h"
#include "jsonbody.h"
#include "prom.h"
#include "respond.h"
#include "spec.h"
#include "sse.h"
#include "st_gpt2.h"
#include "static.h"
#include "hash.h"

#define LIST_LIMIT_MAX 1000
#define METRICS_LIMIT_MAX 10000
#define LOGS_LIMIT_MAX (1L << 20)
#define LOGS_TAIL_MAX 100000
#define BENCH_HOSTS_MAX 256 /* names in ?hosts= (the launcher's host limit) */
#define PROM_JOBS_PAGES 20

/* ---- shared answers (handlers.h: the other handler files use them too) ----------------------------------------------------------------------------- */

int handler_problem(http_req_t *rq, json_t *p)
{
    problem_set_instance(p, rq->path);
    return respond_problem(rq->conn, p, NULL, 0);
}

int handler_coord_error(http_req_t *rq, int code, const char *err)
{
    return handler_problem(rq, problem_from_coord(code, err));
}

/* A bad query parameter: err starts with its name ("limit: must be ..."). */
int handler_bad_parameter(http_req_t *rq, const char *err)
{
    char name[64];
    size_t n = strcspn(err, ":");
    snprintf(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), err);
    return handler_problem(rq, problem_new(400, "invalid-parameter", "Invalid query parameter", err, "parameter", name));
}

int handler_refused(http_req_t *rq, int act, const char *kind, const char *id, int exists, const char *owner, int *ret)
{
    char why[256];
    user_target_t t = {.kind = kind, .id = id, .exists = exists, .owner = owner && *owner ? owner : NULL};
    if (users_may(rq->role, rq->user, (user_action_t)act, &t, why, sizeof why)) return 0;
    *ret = handler_problem(rq, problem_new(403, "forbidden", NULL, why, "role", users_role_name(rq->role)));
    return 1;
}

static const char *job_id(http_req_t *rq) { return rq->match.params[0]; }

/* A member may change only their own jobs: 0 when rq's caller may do act to
 * the job of the route; else 1 with the answer queued in *ret (403, or 503 when the owner
 * cannot be read). An unknown job goes on to the handler's own 404. */
static int job_refused(http_req_t *rq, user_action_t act, int *ret)
{
    if (rq->role == USER_ADMIN) return 0;
    char owner[USER_OWNER_MAX + 1];
    int exists = 0;
    int code = coord_job_owner(rq->srv->coord, job_id(rq), owner, sizeof owner, &exists);
    if (code != COORD_OK) {
        *ret = handler_coord_error(rq, code, NULL);
        return 1;
    }
    return exists && handler_refused(rq, act, "job", job_id(rq), 1, owner, ret);
}

/* The caller as the coordinator sees them: the owner of what they create, whose limits
 * bind it (coordinator.h); nobody for an anonymous caller. */
static coord_caller_t caller(const http_req_t *rq) { return (coord_caller_t){rq->authed ? rq->user : NULL, rq->role}; }

/* ---- jobs ------------------------------------------------------------------------------------------ */

int handle_jobs_list(http_req_t *rq)
{
    const char *state = NULL;
    long offset = 0, limit = 50;
    char err[256];
    if (query_state(&rq->query, "state", &state, err, sizeof err) < 0 ||
        query_long(&rq->query, "offset", 0, LONG_MAX, 0, &offset, err, sizeof err) < 0 ||
        query_long(&rq->query, "limit", 1, LIST_LIMIT_MAX, 1, &limit, err, sizeof err) < 0)
        return handler_bad_parameter(rq, err);
    json_t *out = NULL;
    int code = coord_list(rq->srv->coord, state, offset, limit, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

json_t *handlers_body_spec(const char *body, size_t len, job_spec_t *out)
{
    if (!body || len == 0)
        return problem_new(400, "invalid-json", "Invalid JSON", "the request body is empty", NULL, NULL);
    if (memchr(body, 0, len))
        return problem_new(400, "invalid-json", "Invalid JSON", "the request body contains a NUL byte", NULL, NULL);
    /* Decoded once, for both checks: the JSON itself, then the spec (spec_from_json). A
     * repeated key is the spec's error, as spec_parse reports it, unless the body is also
     * broken JSON further on (then, as without the duplicate, it is invalid JSON). */
    json_error_t jerr;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc && json_error_code(&jerr) == json_error_duplicate_key) {
        json_error_t jerr2;
        json_t *plain = json_loadb(body, len, 0, &jerr2);
        if (plain) {
            json_decref(plain);
            char err[512];
            spec_json_error(&jerr, err, sizeof err);
            return problem_from_coord(COORD_EINVAL, err);
        }
        jerr = jerr2;
    }
    if (!doc) {
        char detail[512];
        snprintf(detail, sizeof detail, "line %d column %d: %s", jerr.line, jerr.column, jsonbody_text(&jerr));
        return problem_new(400, "invalid-json", "Invalid JSON", detail, NULL, NULL);
    }
    char err[512];
    int bad = spec_from_json(doc, out, err, sizeof err) != 0;
    json_decref(doc);
    return bad ? problem_from_coord(COORD_EINVAL, err) : NULL;
}

json_t *handlers_body_problem(const char *body, size_t len)
{
    job_spec_t *s = malloc(sizeof *s);
    if (!s) return problem_new(500, "internal", NULL, "out of memory", NULL, NULL);
    json_t *p = handlers_body_spec(body, len, s);
    free(s);
    return p;
}

int handle_jobs_submit(http_req_t *rq)
{
    job_spec_t *s = malloc(sizeof *s);
    if (!s) return handler_problem(rq, problem_new(500, "internal", NULL, "out of memory", NULL, NULL));
    coord_userdata_sync(rq->srv->coord, NULL); /* a user's data set named by dataset.name */
    json_t *p = handlers_body_spec(rq->body, rq->body_len, s);
    if (p) {
        free(s);
        return handler_problem(rq, p);
    }
    char id[COORD_ID_MAX], err[1024] = "";
    json_t *job = NULL;
    coord_caller_t by = caller(rq);
    /* the job is stored with its owner (and the caller's limits checked) in one step */
    int code = coord_submit_spec_by(rq->srv->coord, s, &by, id, sizeof id, &job, err, sizeof err);
    free(s);
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    if (!job) job = json_pack("{s:s, s:s}", "id", id, "state", "QUEUED"); /* stored; out of memory here */
    snprintf(rq->target, sizeof rq->target, "%s", id);
    char location[96];
    snprintf(location, sizeof location, "/api/v1/jobs/%s", id);
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, location}};
    clog_printf("http: job %s submitted", id);
    return respond_json(rq->conn, MHD_HTTP_CREATED, job, h, 1);
}

/* ---- the job cache: a dashboard or a script polling one job costs Redis one read per
 * cache period, not one per request. Slots are picked by a hash of the id; a collision
 * simply replaces the older entry. ---- */

static job_cache_entry_t *cache_slot(http_server_t *srv, const char *id)
{
    return &srv->job_cache[str_hash(id) % HTTP_JOB_CACHE_SLOTS];
}

/* A fresh copy of the cached answer for id, or NULL. */
static char *cache_get(http_server_t *srv, const char *id, size_t *len)
{
    if (srv->cache_s <= 0) return NULL;
    char *copy = NULL;
    pthread_mutex_lock(&srv->job_cache_lock);
    job_cache_entry_t *e = cache_slot(srv, id);
    if (e->text && strcmp(e->id, id) == 0 && clock_mono_s() - e->at < srv->cache_s && (copy = malloc(e->len))) {
        memcpy(copy, e->text, e->len);
        *len = e->len;
    }
    pthread_mutex_unlock(&srv->job_cache_lock);
    return copy;
}

static void cache_put(http_server_t *srv, const char *id, const char *text, size_t len, double at)
{
    size_t idlen = strlen(id);
    if (srv->cache_s <= 0 || idlen >= COORD_ID_MAX) return;
    char *copy = malloc(len);
    if (!copy) return;
    memcpy(copy, text, len);
    pthread_mutex_lock(&srv->job_cache_lock);
    job_cache_entry_t *e = cache_slot(srv, id);
    free(e->text);
    memcpy(e->id, id, idlen + 1);
    e->text = copy;
    e->len = len;
    e->at = at;
    pthread_mutex_unlock(&srv->job_cache_lock);
}

static void cache_drop(http_server_t *srv, const char *id)
{
    pthread_mutex_lock(&srv->job_cache_lock);
    job_cache_entry_t *e = cache_slot(srv, id);
    if (e->text && strcmp(e->id, id) == 0) {
        free(e->text);
        e->text = NULL;
    }
    pthread_mutex_unlock(&srv->job_cache_lock);
}

int handle_job_get(http_req_t *rq)
{
    size_t len = 0;
    char *text = cache_get(rq->srv, job_id(rq), &len);
    if (!text) {
        double at = clock_mono_s(); /* before the read: the entry is never fresher than Redis was */
        json_t *out = NULL;
        int code = coord_get(rq->srv->coord, job_id(rq), &out);
        if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
        text = respond_json_text(out, &len);
        if (!text) return MHD_NO;
        cache_put(rq->srv, job_id(rq), text, len, at);
    }
    return respond_buffer(rq->conn, MHD_HTTP_OK, "application/json", text, len, NULL, 0);
}

int handle_job_cancel(http_req_t *rq)
{
    int ret;
    if (job_refused(rq, USER_ACT_CANCEL, &ret)) return ret;
    char err[512] = "";
    int code = coord_cancel(rq->srv->coord, job_id(rq), err, sizeof err);
    cache_drop(rq->srv, job_id(rq));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    json_t *job = NULL;
    if (coord_get(rq->srv->coord, job_id(rq), &job) != COORD_OK)
        job = json_pack("{s:s, s:b}", "id", job_id(rq), "cancel_requested", 1);
    /* A queued job is cancelled at once (200); a running one once its processes are gone
     * (202). Only a running job gets cancel_requested, and keeps it once the daemon has
     * marked it CANCELLED, which may already have happened by this read: so the field,
     * not the state, says which answer is due. */
    unsigned status = json_object_get(job, "cancel_requested") ? MHD_HTTP_ACCEPTED : MHD_HTTP_OK;
    clog_printf("http: job %s cancel requested", job_id(rq));
    return respond_json(rq->conn, status, job, NULL, 0);
}

/* POST /api/v1/jobs/{id}/retry: the new job, 201 with its Location. The
 * parent's cached answer is dropped: it now lists the retry. */
int handle_job_retry(http_req_t *rq)
{
    int ret;
    if (job_refused(rq, USER_ACT_RETRY, &ret)) return ret;
    char id[COORD_ID_MAX], err[1024] = "";
    coord_caller_t by = caller(rq);
    int code = coord_retry_by(rq->srv->coord, job_id(rq), &by, id, sizeof id, err, sizeof err);
    cache_drop(rq->srv, job_id(rq));
    if (code == COORD_ESTATE)
        return handler_problem(rq, problem_new(409, "job-not-finished", "The job has not finished", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    json_t *job = NULL;
    snprintf(rq->target, sizeof rq->target, "%s", id);
    if (coord_get(rq->srv->coord, id, &job) != COORD_OK)
        job = json_pack("{s:s, s:s, s:s}", "id", id, "state", "QUEUED", "parent", job_id(rq));
    char location[96];
    snprintf(location, sizeof location, "/api/v1/jobs/%s", id);
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, location}};
    clog_printf("http: job %s submitted as a retry of %s", id, job_id(rq));
    return respond_json(rq->conn, MHD_HTTP_CREATED, job, h, 1);
}

int handle_job_nodes(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_nodes(rq->srv->coord, job_id(rq), &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_job_metrics(http_req_t *rq)
{
    long limit = 500;
    char err[256];
    const char *since = query_get(&rq->query, "since");
    if (since && *since && strcmp(since, "-") != 0 && jobstore_stream_id_parse(since, NULL, NULL) != 0)
        return handler_bad_parameter(rq, "since: must be a stream id (\"1715000000123-0\") or 0");
    if (query_long(&rq->query, "limit", 1, METRICS_LIMIT_MAX, 1, &limit, err, sizeof err) < 0)
        return handler_bad_parameter(rq, err);
    json_t *out = NULL;
    int code = coord_metrics(rq->srv->coord, job_id(rq), since, limit, &out);
    if (code == COORD_EINVAL) return handler_bad_parameter(rq, "since: must be a stream id (\"1715000000123-0\") or 0");
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_job_events(http_req_t *rq) { return sse_open(rq, job_id(rq)); }

int handle_events(http_req_t *rq) { return sse_open(rq, ""); }

int handle_job_logs(http_req_t *rq)
{
    long offset = 0, limit = 0, tail = 0;
    char err[256];
    if (query_long(&rq->query, "offset", 0, LONG_MAX, 0, &offset, err, sizeof err) < 0 ||
        query_long(&rq->query, "limit", 1, LOGS_LIMIT_MAX, 1, &limit, err, sizeof err) < 0 ||
        query_long(&rq->query, "tail", 1, LOGS_TAIL_MAX, 1, &tail, err, sizeof err) < 0)
        return handler_bad_parameter(rq, err);
    json_t *out = NULL;
    int code = coord_logs(rq->srv->coord, job_id(rq), offset, limit, tail, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

/* A file name for Content-Disposition: the checkpoint's name, tame characters only. */
static void download_name(const char *id, const char *path, char *out, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t o = (size_t)snprintf(out, len, "%s-", id);
    for (const char *p = base; *p && o + 1 < len; p++) {
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                 c == '_';
        out[o++] = ok ? c : '_';
    }
    out[o < len ? o : len - 1] = 0;
}

/* The open file fd (a whole version: writers replace it by rename) as an attachment. */
static int send_attachment(http_req_t *rq, int fd, const struct stat *st, const char *name)
{
    struct MHD_Response *r = MHD_create_response_from_fd((size_t)st->st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    char disp[800];
    snprintf(disp, sizeof disp, "attachment; filename=\"%.700s\"", name);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp);
    respond_common_headers(r);
    enum MHD_Result ret = MHD_queue_response(rq->conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

/* The open safetensors file fd (the model's own names, F32) written again as o says
 * (common/st_gpt2.h), as the attachment name. */
static int send_converted(http_req_t *rq, int fd, const struct stat *st, const st_out_t *o, const char *name)
{
    void *p = st->st_size > 0 ? mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    close(fd);
    char err[512];
    uint8_t *out = NULL;
    size_t len = 0;
    int rc = p == MAP_FAILED ? (snprintf(err, sizeof err, "model.safetensors: %s",
                                         st->st_size > 0 ? strerror(errno) : "an empty file"),
                                -1)
                             : st_convert(p, (size_t)st->st_size, o, &out, &len, err, sizeof err);
    if (p != MAP_FAILED) munmap(p, (size_t)st->st_size);
    if (rc == -2)
        return handler_problem(rq, problem_new(422, "names-unsupported", "Not this model's names", err, "parameter",
                                               "names"));
    if (rc != 0) {
        clog_printf("http: GET %s: %s", rq->path, err);
        return handler_problem(rq, problem_new(500, "internal", "Internal error", err, NULL, NULL));
    }
    char disp[800];
    snprintf(disp, sizeof disp, "attachment; filename=\"%.700s\"", name);
    const http_header_t h[] = {{MHD_HTTP_HEADER_CONTENT_DISPOSITION, disp}};
    return respond_buffer(rq->conn, 200, "application/octet-stream", (char *)out, len, h, 1);
}

/* The job's model file (model.onnx, model.safetensors) as an attachment ID.EXT;
 * model.safetensors written as the query's names and dtype say (o; NULL: as it is). */
static int send_model_file(http_req_t *rq, const char *file, const char *ext, const st_out_t *o)
{
    char path[PATH_MAX];
    int code = coord_model_file_path(rq->srv->coord, job_id(rq), file, path, sizeof path);
    int fd = code == COORD_OK ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    struct stat st;
    if (code == COORD_OK && (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        if (fd >= 0) close(fd);
        code = COORD_MODEL_NONE;
    }
    if (code == COORD_MODEL_NONE) {
        char detail[400];
        snprintf(detail, sizeof detail,
                 "the job has no %s: its worker writes one with each checkpoint and at the end, so a job that "
                 "failed or was cancelled before its first checkpoint never has one (nor does a simulated job)",
                 file);
        return handler_problem(rq, problem_new(404, "no-model", "No trained model yet", detail, NULL, NULL));
    }
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    char name[600];
    snprintf(name, sizeof name, "%.580s.%s", job_id(rq), ext); /* a valid job id: tame characters */
    if (o && (o->hf || o->dtype != ST_F32)) return send_converted(rq, fd, &st, o, name);
    return send_attachment(rq, fd, &st, name);
}

int handle_job_model_onnx(http_req_t *rq) { return send_model_file(rq, "model.onnx", "onnx", NULL); }

/* ?names=hf (Hugging Face GPT-2's names and Conv1D layout) and ?dtype=bf16 rewrite the
 * stored file (the model's own names, F32) on the way out. */
int handle_job_model_safetensors(http_req_t *rq)
{
    st_out_t o;
    char err[200];
    if (st_out_parse(query_get(&rq->query, "names"), query_get(&rq->query, "dtype"), &o, err, sizeof err) != 0)
        return handler_bad_parameter(rq, err);
    return send_model_file(rq, "model.safetensors", "safetensors", &o);
}

int handle_job_checkpoint(http_req_t *rq)
{
    char path[PATH_MAX];
    int code = coord_checkpoint_path(rq->srv->coord, job_id(rq), path, sizeof path);
    if (code == COORD_ENOTFOUND) {
        /* Unknown job, or no checkpoint yet: tell which. */
        json_t *job = NULL;
        int known = coord_get(rq->srv->coord, job_id(rq), &job) == COORD_OK;
        json_decref(job);
        if (known)
            return handler_problem(rq, problem_new(404, "no-checkpoint", "No checkpoint yet",
                                                   "the job has not written a checkpoint yet", NULL, NULL));
    }
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    /* The worker replaces the file by rename: the open descriptor keeps one whole version. */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd >= 0) close(fd);
        return handler_problem(rq, problem_new(404, "no-checkpoint", "No checkpoint yet", "the checkpoint file is gone",
                                               NULL, NULL));
    }
    char name[160];
    download_name(job_id(rq), path, name, sizeof name);
    return send_attachment(rq, fd, &st, name);
}

/* ---- cluster, health, docs -------------------------------------------------------------------------- */

int handle_cluster(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_cluster(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_cluster_classes(http_req_t *rq)
{
    json_t *out = NULL;
    int code = coord_cluster_classes(rq->srv->coord, &out);
    if (code != COORD_OK) return handler_coord_error(rq, code, NULL);
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

int handle_cluster_reload(http_req_t *rq)
{
    json_t *out = NULL;
    char err[1024] = "";
    int code = coord_cluster_reload(rq->srv->coord, &out, err, sizeof err);
    if (code == COORD_EINVAL)
        return handler_problem(rq,
                               problem_new(500, "reload-failed", "The host list could not be read", err, NULL, NULL));
    if (code == COORD_ESTATE)
        return handler_problem(rq, problem_new(409, "not-the-daemon", "No host list here", err, NULL, NULL));
    if (code == COORD_EUNAVAIL)
        return handler_problem(rq, problem_new(503, "reload-timeout", "The coordinator is busy", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    clog_printf("http: host list reloaded");
    return respond_json(rq->conn, MHD_HTTP_OK, out, NULL, 0);
}

/* POST /api/v1/cluster/benchmark?model=M&dataset=D&hosts=a,b: starts a benchmark round and
 * answers 202 at once (a Slurm queue may hold it for minutes): the hosts' "benchmark" in
 * GET /api/v1/cluster shows it running, then its result. */
int handle_cluster_benchmark(http_req_t *rq)
{
    const char *model = query_get(&rq->query, "model");
    const char *dataset = query_get(&rq->query, "dataset");
    const char *hl = query_get(&rq->query, "hosts");
    char list[4096], err[1024] = "";
    const char *names[BENCH_HOSTS_MAX];
    int n = 0;
    if (model && (!*model || strlen(model) >= 64))
        return handler_bad_parameter(rq, "model: must be a model name (1 to 63 bytes)");
    if (dataset && (!*dataset || strlen(dataset) >= 64))
        return handler_bad_parameter(rq, "dataset: must be a data set name (1 to 63 bytes)");
    if (hl && strlen(hl) >= sizeof list) return handler_bad_parameter(rq, "hosts: longer than 4095 bytes");
    if (hl) {
        snprintf(list, sizeof list, "%s", hl);
        for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (n == BENCH_HOSTS_MAX) return handler_bad_parameter(rq, "hosts: more than 256 names");
            names[n++] = t;
        }
        if (n == 0) return handler_bad_parameter(rq, "hosts: a comma-separated list of host names");
    }
    json_t *out = NULL;
    int code = coord_cluster_benchmark(rq->srv->coord, model, dataset, names, n, &out, err, sizeof err);
    if (code == COORD_EINVAL)
        return handler_problem(rq, problem_new(400, "invalid-benchmark", "The benchmark cannot run", err, NULL, NULL));
    if (code == COORD_ESTATE)
        return handler_problem(rq, problem_new(409, "benchmark-busy", "No benchmark now", err, NULL, NULL));
    if (code == COORD_EUNAVAIL)
        return handler_problem(rq, problem_new(503, "benchmark-timeout", "The coordinator is busy", err, NULL, NULL));
    if (code != COORD_OK) return handler_coord_error(rq, code, err);
    clog_printf("http: benchmark of %s asked for", json_string_value(json_object_get(out, "model")));
    http_header_t h[] = {{MHD_HTTP_HEADER_LOCATION, "/api/v1/cluster"}};
    return respond_json(rq->conn, MHD_HTTP_ACCEPTED, out, h, 1);
}

/* 503 unless Redis answers and takes a write: a load balancer or a Kubernetes readiness
 * probe counts only 2xx as ready, and a coordinator whose Redis refuses writes (a full
 * disk) refuses every submission with 503 too. "degraded" says Redis answers but refuses
 * writes, with its error line; "unavailable" that it does not answer. */
int handle_healthz(http_req_t *rq)
{
    char err[400] = "";
    int code = coord_health(rq->srv->coord, err, sizeof err);
    json_t *cl = NULL;
    if (code == COORD_OK) code = coord_cluster(rq->srv->coord, &cl);
    if (code != COORD_OK) {
        json_t *body = json_pack("{s:s, s:s, s:s}", "status", code == COORD_ESTATE ? "degraded" : "unavailable",
                                 "redis", code == COORD_ESTATE ? "refuses writes" : "no answer", "detail",
                                 err[0] ? err : "Redis does not answer");
        return respond_json(rq->conn, MHD_HTTP_SERVICE_UNAVAILABLE, body, NULL, 0);
    }
    json_t *body = json_pack("{s:s, s:s, s:O?}", "status", "ok", "redis", "ok", "coordinator_alive",
                             json_object_get(cl, "alive"));
    json_decref(cl);
    return respond_json(rq->conn, MHD_HTTP_OK, body, NULL, 0);
}

int handle_openapi(http_req_t *rq)
{
    if (!rq->srv->openapi)
        return handler_problem(rq, problem_new(404, "not-found", NULL, "docs/openapi.json was not found at start", NULL,
                                               NULL));
    char *copy = malloc(rq->srv->openapi_len);
    if (!copy) return MHD_NO;
    memcpy(copy, rq->srv->openapi, rq->srv->openapi_len);
    return respond_buffer(rq->conn, MHD_HTTP_OK, "application/json", copy, rq->srv->openapi_len, NULL, 0);
}

int handle_index(http_req_t *rq) { return static_serve(rq->conn, rq->srv->static_dir, "index.html", rq->path); }

int handle_static(http_req_t *rq) { return static_serve(rq->conn, rq->srv->static_dir, rq->match.params[0], rq->path); }

int handle_not_found(http_req_t *rq)
{
    return handler_problem(rq, problem_new(404, "not-found", NULL, "no such endpoint; see /api/v1/openapi.json", NULL,
                                           NULL));
}

/* ---- Prometheus ------------------------------------------------------------------------------------- */

/* Gathers the scrape: job counts by state (one coord_list per 1000 jobs) and the nodes
 * of each running job (one pipelined round trip each). */
static char *prom_build(http_server_t *srv, size_t *len)
{
    prom_input_t in;
    memset(&in, 0, sizeof in);
    json_t *running = json_array(), *nodes_arr = json_array();
    json_t **nodes = NULL;
    long *restarts = NULL;
    char *text = NULL;
    long total = 0;
    in.redis_up = 1;
    for (long page = 0; page < PROM_JOBS_PAGES && in.redis_up; page++) {
        json_t *list = NULL;
        if (coord_list(srv->coord, NULL, page * LIST_LIMIT_MAX, LIST_LIMIT_MAX, &list) != COORD_OK) {
            in.redis_up = 0;
            break;
        }
        total = (long)json_integer_value(json_object_get(list, "total"));
        size_t i;
        json_t *job;
        json_array_foreach(json_object_get(list, "jobs"), i, job)
        {
            const char *st = json_string_value(json_object_get(job, "state"));
            for (int s = 0; st && QUERY_STATES[s]; s++)
                if (strcmp(st, QUERY_STATES[s]) == 0) in.states[s]++;
            if (st && strcmp(st, "RUNNING") == 0) json_array_append(running, job);
        }
        json_decref(list);
        if ((page + 1) * LIST_LIMIT_MAX >= total) break;
    }
    size_t nrun = json_array_size(running);
    if (in.redis_up && nrun > 0) {
        nodes = calloc(nrun, sizeof *nodes);
        restarts = calloc(nrun, sizeof *restarts);
        if (!nodes || !restarts) goto out;
        for (size_t i = 0; i < nrun; i++) {
            json_t *job = json_array_get(running, i);
            json_t *n = NULL;
            if (coord_nodes(srv->coord, json_string_value(json_object_get(job, "id")), &n) != COORD_OK) continue;
            json_array_append_new(nodes_arr, n);
            restarts[in.nnodes] = (long)json_integer_value(json_object_get(job, "restarts"));
            nodes[in.nnodes++] = n;
        }
    }
    in.nodes = nodes;
    in.restarts = restarts;
    pthread_mutex_lock(&srv->lock);
    in.sse_streams = srv->sse_open;
    pthread_mutex_unlock(&srv->lock);
    text = prom_render(&in, len);
out:
    free(nodes);
    free(restarts);
    json_decref(running);
    json_decref(nodes_arr);
    return text;
}

/* One thread rebuilds a stale text while the others keep serving the previous one, so
 * a scrape never waits for Redis unless there is no text at all yet. */
int handle_prometheus(http_req_t *rq)
{
    http_server_t *srv = rq->srv;
    pthread_mutex_lock(&srv->prom_lock);
    double now = clock_mono_s();
    if (!srv->prom_building && (!srv->prom_text || now - srv->prom_at >= PROM_CACHE_S)) {
        srv->prom_building = 1;
        int first = !srv->prom_text;
        if (!first) pthread_mutex_unlock(&srv->prom_lock);
        size_t len = 0;
        char *text = prom_build(srv, &len);
        if (!first) pthread_mutex_lock(&srv->prom_lock);
        if (text) {
            free(srv->prom_text);
            srv->prom_text = text;
            srv->prom_len = len;
            srv->prom_at = now;
        }
        srv->prom_building = 0;
    }
    char *copy = srv->prom_text ? malloc(srv->prom_len + 1) : NULL;
    size_t len = srv->prom_len;
    if (copy) memcpy(copy, srv->prom_text, len);
    pthread_mutex_unlock(&srv->prom_lock);
    if (!copy) return handler_problem(rq, problem_new(500, "internal", NULL, "out of memory", NULL, NULL));
    return respond_buffer(rq->conn, MHD_HTTP_OK, PROM_CONTENT_TYPE, copy, len, NULL, 0);
}
