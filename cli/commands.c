/* cli/commands.c - the commands of `pacer` except watch (watch.c): each builds its
 * request, calls the API through client.h and prints the answer for people (format.h)
 * or, with --json, as the API sent it. */
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calls.h"
#include "format.h"
#include "fs.h"

#define SPEC_MAX (1u << 20) /* the API's body limit */
#define LOG_PAGE (1L << 20)
#define FOLLOW_POLL_MS 500


static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int job_path(const cli_ctx_t *cx, const char *id, const char *suffix, char *out, size_t len)
{
    if (client_job_path(out, len, id, suffix) != 0) {
        fprintf(stderr, "pacer %s: job id too long\n", cli_cmd_name(cx));
        return CLI_EXIT_USAGE;
    }
    return CLI_EXIT_OK;
}

/* ---- submit, retry -------------------------------------------------------------------------- */

static char *read_spec(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(SPEC_MAX + 1);
    size_t n = buf ? fread(buf, 1, SPEC_MAX + 1, f) : 0;
    int bad = !buf || ferror(f);
    if (f != stdin) fclose(f);
    if (bad || n > SPEC_MAX || n == 0) {
        if (bad) snprintf(err, errlen, "%s: cannot read it", path);
        else if (n == 0) snprintf(err, errlen, "%s: empty", path);
        else snprintf(err, errlen, "%s: larger than %u bytes (the API's limit)", path, SPEC_MAX);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* A 201 answer with a new job: its id (or the job as JSON), then --watch. */
static int created(cli_ctx_t *cx, json_t *job)
{
    const char *id = json_string_value(json_object_get(job, "id"));
    char copy[64];
    snprintf(copy, sizeof copy, "%s", id ? id : "");
    /* Valid, but known to train badly: the coordinator says why (spec_warnings). */
    size_t i;
    json_t *wv;
    json_array_foreach(json_object_get(job, "warnings"), i, wv)
    {
        char line[1024];
        fmt_clean(json_string_value(wv) ? json_string_value(wv) : "", 900, line, sizeof line);
        fprintf(stderr, "pacer %s: warning: %s\n", cli_cmd_name(cx), line);
    }
    if (cx->args->json) fmt_json(stdout, job);
    else printf("%s\n", copy);
    fflush(stdout);
    json_decref(job);
    if (!copy[0]) {
        fprintf(stderr, "pacer %s: the answer names no job id\n", cli_cmd_name(cx));
        return CLI_EXIT_API;
    }
    return cx->args->watch ? cli_watch(cx, copy) : CLI_EXIT_OK;
}

int cmd_submit(cli_ctx_t *cx)
{
    char err[512];
    size_t len = 0;
    char *spec = read_spec(cx->args->arg, &len, err, sizeof err);
    if (!spec) {
        fprintf(stderr, "pacer submit: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    json_t *job = NULL;
    int rc = cli_call_json(cx, "POST", "/api/v1/jobs", spec, len, &r, &job);
    free(spec);
    client_resp_free(&r);
    return rc == CLI_EXIT_OK ? created(cx, job) : rc;
}

int cmd_retry(cli_ctx_t *cx)
{
    char path[512];
    int rc = job_path(cx, cx->args->arg, "/retry", path, sizeof path);
    if (rc) return rc;
    client_resp_t r;
    json_t *job = NULL;
    rc = cli_call_json(cx, "POST", path, NULL, 0, &r, &job);
    client_resp_free(&r);
    return rc == CLI_EXIT_OK ? created(cx, job) : rc;
}

/* ---- ls, get, cancel ------------------------------------------------------------------------ */

int cmd_ls(cli_ctx_t *cx)
{
    char path[512];
    int n = snprintf(path, sizeof path, "/api/v1/jobs?limit=%ld", cx->args->limit);
    if (cx->args->state) {
        /* A state is letters: anything else would only be refused by the API anyway. */
        if (strspn(cx->args->state, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != strlen(cx->args->state) ||
            strlen(cx->args->state) > 32) {
            fprintf(stderr,
                    "pacer ls: --state: '%.40s' is not a state (QUEUED, RUNNING, RESTARTING, SUCCEEDED, "
                    "FAILED, CANCELLED)\n",
                    cx->args->state);
            return CLI_EXIT_USAGE;
        }
        snprintf(path + n, sizeof path - (size_t)n, "&state=%s", cx->args->state);
    }
    json_t *list = NULL;
    int rc = cli_get_json(cx, path, &list);
    if (rc) return rc;
    if (cx->args->json) fmt_json(stdout, list);
    else fmt_jobs(stdout, list, now_s());
    json_decref(list);
    return CLI_EXIT_OK;
}

int cmd_get(cli_ctx_t *cx)
{
    char path[512];
    int rc = job_path(cx, cx->args->arg, "", path, sizeof path);
    json_t *job = NULL;
    if (rc || (rc = cli_get_json(cx, path, &job))) return rc;
    if (cx->args->json) fmt_json(stdout, job);
    else fmt_job(stdout, job, now_s());
    json_decref(job);
    return CLI_EXIT_OK;
}

int cmd_cancel(cli_ctx_t *cx)
{
    char path[512];
    int rc = job_path(cx, cx->args->arg, "", path, sizeof path);
    if (rc) return rc;
    client_resp_t r;
    json_t *job = NULL;
    rc = cli_call_json(cx, "DELETE", path, NULL, 0, &r, &job);
    long status = r.status;
    client_resp_free(&r);
    if (rc) return rc;
    if (cx->args->json) {
        fmt_json(stdout, job);
    } else {
        const char *st = json_string_value(json_object_get(job, "state"));
        if (status == 200) printf("%s: %s\n", cx->args->arg, st ? st : "CANCELLED");
        else
            printf("%s: cancel requested (%s; `pacer watch %s` follows it)\n", cx->args->arg, st ? st : "running",
                   cx->args->arg);
    }
    json_decref(job);
    return CLI_EXIT_OK;
}

/* ---- logs ------------------------------------------------------------------------------------- */

/* One page of the log: prints its text (or the page as JSON); *next and *size from it. */
static int log_page(cli_ctx_t *cx, const char *path, long long *next, long long *size, size_t *got)
{
    json_t *page = NULL;
    int rc = cli_get_json(cx, path, &page);
    if (rc) return rc;
    const char *text = json_string_value(json_object_get(page, "text"));
    *got = text ? strlen(text) : 0;
    *next = (long long)json_integer_value(json_object_get(page, "next_offset"));
    *size = (long long)json_integer_value(json_object_get(page, "size"));
    if (cx->args->json) fmt_json_line(stdout, page);
    else if (*got) fwrite(text, 1, *got, stdout);
    fflush(stdout);
    json_decref(page);
    return CLI_EXIT_OK;
}

/* The job's state now: 1 and *exit_code when it has ended, 0 when not, or -(status). */
static int job_ended(cli_ctx_t *cx, int *exit_code)
{
    char path[512];
    json_t *job = NULL;
    if (job_path(cx, cx->args->arg, "", path, sizeof path)) return -CLI_EXIT_USAGE;
    int rc = cli_get_json(cx, path, &job);
    if (rc) return -rc;
    *exit_code = fmt_state_exit(json_string_value(json_object_get(job, "state")));
    json_decref(job);
    return *exit_code >= 0;
}

int cmd_logs(cli_ctx_t *cx)
{
    char base[512], path[640];
    int rc = job_path(cx, cx->args->arg, "/logs", base, sizeof base);
    if (rc) return rc;
    long long offset = 0, next = 0, size = 0;
    size_t got = 0;
    if (cx->args->tail > 0) {
        snprintf(path, sizeof path, "%s?tail=%ld", base, cx->args->tail);
        if ((rc = log_page(cx, path, &next, &size, &got))) return rc;
        offset = next;
        if (!cx->args->follow) return CLI_EXIT_OK;
    }
    int ended = 0, exit_code = CLI_EXIT_OK;
    for (;;) {
        snprintf(path, sizeof path, "%s?offset=%lld&limit=%ld", base, offset, LOG_PAGE);
        if ((rc = log_page(cx, path, &next, &size, &got))) return rc;
        if (size < offset) next = 0; /* rotated (copied to log.1 and truncated): start over */
        int more = next > offset;
        offset = next;
        if (more && next < size) continue;
        if (!cx->args->follow || ended) break;
        /* Caught up: has the job ended? Then one more read takes what it wrote last. */
        int e = job_ended(cx, &exit_code);
        if (e < 0) return -e;
        if (e) {
            ended = 1;
            continue;
        }
        if (!more) nap_ms(FOLLOW_POLL_MS);
    }
    return cx->args->follow ? exit_code : CLI_EXIT_OK;
}

/* ---- the catalog ------------------------------------------------------------------------------ */

int cmd_models(cli_ctx_t *cx)
{
    char path[512];
    const char *name = cx->args->arg;
    if (name && client_item_path(path, sizeof path, "/api/v1/models/", name, "") != 0) {
        fprintf(stderr, "pacer models: model name too long\n");
        return CLI_EXIT_USAGE;
    }
    json_t *out = NULL;
    int rc = cli_get_json(cx, name ? path : "/api/v1/models", &out);
    if (rc) return rc;
    if (cx->args->json) fmt_json(stdout, out);
    else if (name) fmt_model(stdout, out);
    else fmt_models(stdout, out);
    json_decref(out);
    return CLI_EXIT_OK;
}

/* The largest file `pacer upload` reads: the coordinator's --max-model-bytes decides. */
#define UPLOAD_READ_MAX ((size_t)1 << 30)

int cmd_upload(cli_ctx_t *cx)
{
    char path[512];
    const char *name = cx->args->arg, *file = cx->args->arg2;
    if (client_item_path(path, sizeof path, "/api/v1/models/", name, "") != 0) {
        fprintf(stderr, "pacer upload: model name too long\n");
        return CLI_EXIT_USAGE;
    }
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "pacer upload: %s: %s\n", file, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    int bad = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : (size_t)1 << 16;
            char *p = cap <= UPLOAD_READ_MAX ? realloc(data, cap) : NULL;
            if (!p) {
                bad = 1;
                break;
            }
            data = p;
        }
        size_t r = fread(data + len, 1, cap - len, f);
        len += r;
        if (r == 0) break;
    }
    bad |= ferror(f);
    fclose(f);
    if (bad) {
        free(data);
        fprintf(stderr, "pacer upload: %s: cannot read it (or larger than %zu bytes)\n", file, UPLOAD_READ_MAX);
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    json_t *out = NULL;
    int rc = cli_call_json(cx, "PUT", path, data ? data : "", len, &r, &out);
    long status = r.status;
    client_resp_free(&r);
    free(data);
    if (rc) return rc;
    if (cx->args->json) fmt_json(stdout, out);
    else fmt_upload(stdout, out, status == 201);
    json_decref(out);
    return CLI_EXIT_OK;
}

int cmd_rm_model(cli_ctx_t *cx)
{
    char path[512], err[1024];
    if (client_item_path(path, sizeof path, "/api/v1/models/", cx->args->arg, "") != 0) {
        fprintf(stderr, "pacer rm-model: model name too long\n");
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    if (client_call(cx->client, "DELETE", path, NULL, 0, &r, err, sizeof err) != 0) return cli_unreachable(cx, err);
    int rc = r.status == 204 ? CLI_EXIT_OK : cli_api_error(cx, &r);
    client_resp_free(&r);
    if (rc == CLI_EXIT_OK && !cx->args->json) printf("%s: deleted\n", cx->args->arg);
    return rc;
}

/* ---- users -------------------------------------------------------------------------- */

static int user_usage(const char *why)
{
    fprintf(stderr,
            "pacer user: %s (usage: pacer user add NAME --role ROLE [--expires S] | ls | rm NAME | weight NAME "
            "--weight W)\n",
            why);
    return CLI_EXIT_USAGE;
}

/* A new token is printed alone on its line (stdout), for a script to keep; what it is
 * goes to stderr. */
static void print_token(const cli_ctx_t *cx, json_t *out, const char *what)
{
    if (cx->args->json) {
        fmt_json(stdout, out);
        return;
    }
    printf("%s\n", json_string_value(json_object_get(out, "token")));
    fprintf(stderr, "%s: the token above is shown this once; only a salted hash of it is kept\n", what);
}

int cmd_user(cli_ctx_t *cx)
{
    const cli_args_t *a = cx->args;
    const char *sub = a->arg, *name = a->arg2;
    int add = strcmp(sub, "add") == 0, ls = strcmp(sub, "ls") == 0, rm = strcmp(sub, "rm") == 0;
    int weight = strcmp(sub, "weight") == 0;
    if (!add && !ls && !rm && !weight) return user_usage("unknown subcommand");
    if ((add || rm || weight) && !name) return user_usage("a NAME is needed");
    if (weight != (a->weight != NULL)) return user_usage("--weight goes with weight, and weight needs it");
    if (ls && name) return user_usage("ls takes no NAME");
    if (!add && (a->role || a->expires)) return user_usage("--role and --expires go with add");
    if (add && !a->role) return user_usage("add needs --role admin, member or viewer");
    client_resp_t r;
    json_t *out = NULL;
    int rc;
    if (ls) {
        if ((rc = cli_get_json(cx, "/api/v1/users", &out))) return rc;
        if (a->json) fmt_json(stdout, out);
        else fmt_users(stdout, out);
    } else if (weight) {
        char *end, path[512];
        double w = strtod(a->weight, &end);
        if (end == a->weight || *end) return user_usage("--weight: not a number");
        if (client_item_path(path, sizeof path, "/api/v1/users/", name, "") != 0) return user_usage("name too long");
        json_t *body = json_pack("{s:f}", "weight", w);
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (!text) return CLI_EXIT_USAGE;
        rc = cli_call_json(cx, "PUT", path, text, strlen(text), &r, &out);
        free(text);
        client_resp_free(&r);
        if (rc) return rc;
        if (a->json) fmt_json(stdout, out);
        else printf("%s: weight %g\n", name, json_real_value(json_object_get(out, "weight")));
    } else if (add) {
        json_t *body = json_pack("{s:s, s:s}", "name", name, "role", a->role);
        if (body && a->expires > 0) json_object_set_new(body, "expires_in_s", json_integer(a->expires));
        char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
        json_decref(body);
        if (!text) return CLI_EXIT_USAGE;
        rc = cli_call_json(cx, "POST", "/api/v1/users", text, strlen(text), &r, &out);
        free(text);
        client_resp_free(&r);
        if (rc) return rc;
        print_token(cx, out, name);
    } else {
        char path[512], err[1024];
        if (client_item_path(path, sizeof path, "/api/v1/users/", name, "") != 0) return user_usage("name too long");
        if (client_call(cx->client, "DELETE", path, NULL, 0, &r, err, sizeof err) != 0) return cli_unreachable(cx, err);
        rc = r.status == 204 ? CLI_EXIT_OK : cli_api_error(cx, &r);
        client_resp_free(&r);
        if (rc == CLI_EXIT_OK && !a->json) printf("%s: removed\n", name);
        return rc;
    }
    json_decref(out);
    return CLI_EXIT_OK;
}

/* host drain NAME [--deadline S] [--reason TEXT] | host undrain NAME. */
int cmd_host(cli_ctx_t *cx)
{
    const cli_args_t *a = cx->args;
    int drain = strcmp(a->arg, "drain") == 0, undrain = strcmp(a->arg, "undrain") == 0;
    char path[512], err[1024];
    if ((!drain && !undrain) || (undrain && (a->deadline || a->reason))) {
        fprintf(stderr,
                "pacer host: usage: pacer host drain NAME [--deadline S] [--reason TEXT] | pacer host undrain NAME\n");
        return CLI_EXIT_USAGE;
    }
    if (client_item_path(path, sizeof path, "/api/v1/cluster/hosts/", a->arg2, "/drain") != 0) {
        fprintf(stderr, "pacer host: NAME too long\n");
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    if (undrain) {
        if (client_call(cx->client, "DELETE", path, NULL, 0, &r, err, sizeof err) != 0) return cli_unreachable(cx, err);
        int rc = r.status == 204 ? CLI_EXIT_OK : cli_api_error(cx, &r);
        client_resp_free(&r);
        if (rc == CLI_EXIT_OK && !a->json) printf("%s: drain ended\n", a->arg2);
        return rc;
    }
    json_t *body = json_object(), *out = NULL;
    if (body && a->deadline > 0) json_object_set_new(body, "deadline_s", json_integer(a->deadline));
    if (body && a->reason) json_object_set_new(body, "reason", json_string(a->reason));
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    if (!text) return CLI_EXIT_USAGE;
    int rc = cli_call_json(cx, "POST", path, text, strlen(text), &r, &out);
    free(text);
    client_resp_free(&r);
    if (rc) return rc;
    if (a->json) fmt_json(stdout, out);
    else
        printf("%s: draining until %.0f (unix s)%s%s\n", a->arg2, json_number_value(json_object_get(out, "deadline")),
               a->reason ? ": " : "", a->reason ? a->reason : "");
    json_decref(out);
    return CLI_EXIT_OK;
}

int cmd_token(cli_ctx_t *cx)
{
    if (strcmp(cx->args->arg, "new") != 0) {
        fprintf(stderr, "pacer token: unknown subcommand '%.40s' (usage: pacer token new)\n", cx->args->arg);
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    json_t *out = NULL;
    int rc = cli_call_json(cx, "POST", "/api/v1/token", "", 0, &r, &out);
    client_resp_free(&r);
    if (rc) return rc;
    print_token(cx, out, "your new token (the old one no longer works)");
    json_decref(out);
    return CLI_EXIT_OK;
}

int cmd_whoami(cli_ctx_t *cx)
{
    json_t *out = NULL;
    int rc = cli_get_json(cx, "/api/v1/whoami", &out);
    if (rc) return rc;
    if (cx->args->json) fmt_json(stdout, out);
    else fmt_whoami(stdout, out);
    json_decref(out);
    return CLI_EXIT_OK;
}

int cmd_datasets(cli_ctx_t *cx)
{
    json_t *out = NULL;
    int rc = cli_get_json(cx, "/api/v1/datasets", &out);
    if (rc) return rc;
    if (cx->args->json) fmt_json(stdout, out);
    else fmt_datasets(stdout, out);
    json_decref(out);
    return CLI_EXIT_OK;
}

/* The hosts of each class and the models left out, on standard error. */
static void cluster_json_notes(const char *cmd, json_t *ans)
{
    const char *cls;
    json_t *hosts, *m;
    size_t i;
    json_object_foreach(json_object_get(ans, "hosts_by_class"), cls, hosts)
    {
        fprintf(stderr, "pacer %s: %s:", cmd, cls);
        json_array_foreach(hosts, i, m) fprintf(stderr, " %s", json_string_value(m));
        fprintf(stderr, "\n");
    }
    json_array_foreach(json_object_get(ans, "left_out"), i, m)
        fprintf(stderr, "pacer %s: left out model %s: %s\n", cmd, json_string_value(json_object_get(m, "model")),
                json_string_value(json_object_get(m, "why")));
}

int cmd_cluster_json(cli_ctx_t *cx)
{
    const char *cmd = cli_cmd_name(cx), *path = cx->args->output;
    json_t *ans = NULL;
    int rc = cli_get_json(cx, "/api/v1/cluster/classes", &ans);
    if (rc) return rc;
    json_t *cl = json_object_get(ans, "cluster");
    char *text = cx->args->json ? NULL : json_dumps(cl, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (cx->args->json) {
        fmt_json(stdout, ans);
    } else if (!text) {
        fprintf(stderr, "pacer %s: the answer has no cluster file\n", cmd);
        rc = CLI_EXIT_API;
    } else if (!path || strcmp(path, "-") == 0) {
        printf("%s\n", text);
    } else {
        size_t len = strlen(text);
        text[len] = '\n'; /* json_dumps's NUL: the file ends with a line end instead */
        if (fs_atomic_write(path, text, len + 1, 0644) != 0) {
            fprintf(stderr, "pacer %s: %s: %s\n", cmd, path, strerror(errno));
            rc = CLI_EXIT_USAGE;
        } else fprintf(stderr, "pacer %s: wrote %s\n", cmd, path);
    }
    if (!rc && !cx->args->json) cluster_json_notes(cmd, ans);
    free(text);
    json_decref(ans);
    return rc;
}

/* ---- trace ------------------------------------------------------------------------------------ */

/* GET /api/v1/jobs/ID{suffix} into -o FILE (default ID{ext}; - = stdout), whole or not at
 * all. */
/* on_error reports an error answer (NULL: cli_api_error) and returns the exit status. */
static int download_job_file(cli_ctx_t *cx, const char *suffix, const char *ext,
                             int (*on_error)(cli_ctx_t *, const client_resp_t *))
{
    const char *id = cx->args->arg;
    const char *cmd = cli_cmd_name(cx);
    char path[512], out[4096], part[4200];
    int rc = job_path(cx, id, suffix, path, sizeof path);
    if (rc) return rc;
    int to_stdout = cx->args->output && strcmp(cx->args->output, "-") == 0;
    if (cx->args->output) {
        snprintf(out, sizeof out, "%s", cx->args->output);
    } else {
        if (strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != strlen(id) ||
            strlen(id) > 64) {
            fprintf(stderr, "pacer %s: give the file with -o ('%.40s' does not make a file name)\n", cmd, id);
            return CLI_EXIT_USAGE;
        }
        snprintf(out, sizeof out, "%s%s", id, ext);
    }
    /* Into a temporary file next to the target, renamed once the whole answer is in: a
     * failed download leaves no half file (and no file at all on an error answer). */
    snprintf(part, sizeof part, "%s.part.%ld", out, (long)getpid());
    FILE *f = to_stdout ? stdout : fopen(part, "wb");
    if (!f) {
        fprintf(stderr, "pacer %s: %s: %s\n", cmd, part, strerror(errno));
        return CLI_EXIT_USAGE;
    }
    client_resp_t r;
    size_t written = 0;
    char err[1024];
    rc = client_download(cx->client, path, f, &written, &r, err, sizeof err);
    int ok = rc == 0 && r.status >= 200 && r.status < 300, local = 0;
    if (to_stdout) fflush(stdout);
    else if (fclose(f) != 0 && ok) local = errno;
    if (ok && !local && !to_stdout && fs_rename(part, out) != 0) local = errno;
    if ((!ok || local) && !to_stdout) unlink(part);
    int status = CLI_EXIT_OK;
    if (local) {
        fprintf(stderr, "pacer %s: %s: %s\n", cmd, out, strerror(local));
        status = CLI_EXIT_USAGE;
    } else if (rc != 0) {
        status = cli_unreachable(cx, err);
    } else if (!ok) {
        status = on_error ? on_error(cx, &r) : cli_api_error(cx, &r);
    } else if (!to_stdout) {
        fprintf(stderr, "pacer %s: wrote %s (%zu bytes)\n", cmd, out, written);
    }
    client_resp_free(&r);
    return status;
}

int cmd_trace(cli_ctx_t *cx) { return download_job_file(cx, "/trace", ".trace.json", NULL); }

/* ---- export ----------------------------------------------------------------------------------- */

/* The API's no-model 404 says only that there is no file; whether one will come depends
 * on the job's state (a job that failed before its first checkpoint never gets one), so
 * the job is asked for and the reason printed (fmt_no_model). Other errors as they came. */
static int export_error(cli_ctx_t *cx, const client_resp_t *r)
{
    json_t *p = r->status == 404 && r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    const char *type = json_string_value(json_object_get(p, "type"));
    int no_model = type && strcmp(type, "urn:pacer:problem:no-model") == 0;
    json_decref(p);
    char path[512], msg[1200];
    json_t *job = NULL;
    if (!no_model || job_path(cx, cx->args->arg, "", path, sizeof path) != 0) return cli_api_error(cx, r);
    int rc = cli_get_json(cx, path, &job);
    if (rc) return rc;
    const char *f = cx->args->format && strcmp(cx->args->format, "safetensors") == 0 ? "model.safetensors"
                                                                                     : "model.onnx";
    fmt_no_model(job, f, msg, sizeof msg);
    json_decref(job);
    fprintf(stderr, "pacer %s: %s\n", cli_cmd_name(cx), msg);
    if (cx->args->json) {
        json_t *doc = json_loadb(r->body, r->len, 0, NULL);
        if (json_is_object(doc)) fmt_json(stdout, doc);
        json_decref(doc);
    }
    return CLI_EXIT_API;
}

/* --format safetensors: model.safetensors, --names and --dtype as its query (their values
 * are words cliargs.c checked: nothing to escape) */
int cmd_export(cli_ctx_t *cx)
{
    const cli_args_t *a = cx->args;
    if (!a->format || strcmp(a->format, "onnx") == 0) {
        if (a->names || a->dtype) {
            fprintf(stderr, "pacer %s: --names and --dtype go with --format safetensors\n", cli_cmd_name(cx));
            return CLI_EXIT_USAGE;
        }
        return download_job_file(cx, "/model.onnx", ".onnx", export_error);
    }
    char suffix[128];
    int at = snprintf(suffix, sizeof suffix, "/model.safetensors");
    if (a->names) at += snprintf(suffix + at, sizeof suffix - (size_t)at, "?names=%s", a->names);
    if (a->dtype) snprintf(suffix + at, sizeof suffix - (size_t)at, "%sdtype=%s", a->names ? "&" : "?", a->dtype);
    return download_job_file(cx, suffix, ".safetensors", export_error);
}
