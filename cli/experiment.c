/* cli/experiment.c - `pacer experiment submit FILE | ls | get ID | cancel ID`: hyperparameter
 * searches (docs/EXPERIMENTS.md), printed for people as tables (format.h) or, with
 * --json, as the API sent them. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "calls.h"
#include "commands.h"
#include "format.h"

#define EXP_BODY_MAX (1u << 20) /* the API's body limit */

static int usage(const char *why)
{
    fprintf(stderr,
            "pacer experiment: %s (usage: pacer experiment submit FILE | ls | get ID | cancel ID; "
            "pacer experiment --help)\n",
            why);
    return CLI_EXIT_USAGE;
}

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* One call whose 2xx answer is JSON: CLI_EXIT_OK with *out, or the failure's status. */
static int exp_call(cli_ctx_t *cx, const char *method, const char *path, const char *body, size_t len, json_t **out)
{
    client_resp_t r;
    int rc = cli_call_json(cx, method, path, body, len, &r, out);
    client_resp_free(&r);
    return rc;
}

static char *read_body(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "pacer experiment submit: %s: %s\n", path, strerror(errno));
        return NULL;
    }
    char *buf = malloc(EXP_BODY_MAX + 1);
    size_t n = buf ? fread(buf, 1, EXP_BODY_MAX + 1, f) : 0;
    int bad = !buf || ferror(f);
    if (f != stdin) fclose(f);
    if (bad || n == 0 || n > EXP_BODY_MAX) {
        fprintf(stderr, "pacer experiment submit: %s: %s\n", path,
                bad      ? "cannot read it"
                : n == 0 ? "empty"
                         : "larger than the API's limit (1 MiB)");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

/* A string member, or dflt. */
static const char *str(json_t *o, const char *key, const char *dflt)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v ? v : dflt;
}

static void num_cell(json_t *v, const char *fmt, char *out, size_t len)
{
    if (json_is_number(v)) snprintf(out, len, fmt, json_number_value(v));
    else snprintf(out, len, "-");
}

static void print_list(json_t *list, double now)
{
    static const char *const H[] = {"ID", "STATE", "NAME", "METHOD", "TRIALS", "BEST", "OWNER", "AGE"};
    table_t *t = table_new(8, H);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(list, "experiments"), i, e)
    {
        char trials[32], best[32], age[32], name[80];
        snprintf(trials, sizeof trials, "%lld", (long long)json_integer_value(json_object_get(e, "trials_total")));
        num_cell(json_object_get(json_object_get(e, "best"), "metric"), "%.4f", best, sizeof best);
        fmt_age(now - json_number_value(json_object_get(e, "submitted")), age, sizeof age);
        const char *n = json_string_value(json_object_get(e, "name"));
        fmt_clean(n ? n : "", 60, name, sizeof name);
        const char *owner = json_string_value(json_object_get(e, "owner"));
        const char *cells[] = {str(e, "id", "?"),
                               str(e, "state", "?"),
                               name,
                               str(e, "method", "?"),
                               trials,
                               best,
                               owner ? owner : "-",
                               age};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
}

/* The params of a trial as "key=value key=value". */
static void params_text(json_t *p, char *out, size_t len)
{
    size_t o = 0;
    const char *k;
    json_t *v;
    out[0] = 0;
    json_object_foreach(p, k, v)
    {
        char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));
        int n = snprintf(out + o, len - o, "%s%s=%s", o ? " " : "", k, s ? s : "?");
        free(s);
        if (n < 0 || (size_t)n >= len - o) break;
        o += (size_t)n;
    }
}

/* PBT: each exploit on a line of its own under the table, oldest first per trial. */
static void print_exploits(json_t *trials)
{
    size_t i, k;
    json_t *tr, *x;
    json_array_foreach(trials, i, tr)
    {
        json_array_foreach(json_object_get(tr, "exploits"), k, x)
        {
            char p[512];
            params_text(json_object_get(x, "params"), p, sizeof p);
            printf("trial %zu exploited trial %lld at epoch %lld (job %s stopped, went on from %s's checkpoint): %s\n",
                   i, (long long)json_integer_value(json_object_get(x, "from")),
                   (long long)json_integer_value(json_object_get(x, "epoch")), str(x, "job", "?"),
                   str(x, "from_job", "?"), p);
        }
    }
}

static void print_one(json_t *e)
{
    char best[64];
    json_t *b = json_object_get(e, "best");
    num_cell(json_object_get(b, "metric"), "%.4f", best, sizeof best);
    printf("%s  %s  %s  %s search of %lld trials, %s %s\n", str(e, "id", "?"), str(e, "name", "?"), str(e, "state", "?"),
           str(e, "method", "?"), (long long)json_integer_value(json_object_get(e, "trials_total")),
           str(e, "metric", "?"), str(json_object_get(e, "search"), "mode", ""));
    if (json_is_object(b)) {
        char p[512];
        params_text(json_object_get(b, "params"), p, sizeof p);
        printf("best: %s (trial %lld, job %s): %s\n", best, (long long)json_integer_value(json_object_get(b, "trial")),
               str(b, "job", "-"), p);
    }
    static const char *const H[] = {"TRIAL", "JOB", "STATE", "RUNG", "EPOCHS", "METRIC", "PARAMS"};
    table_t *t = table_new(7, H);
    size_t i;
    json_t *tr;
    json_array_foreach(json_object_get(e, "trials"), i, tr)
    {
        char trial[24], rung[24], epochs[24], metric[32], p[512];
        snprintf(trial, sizeof trial, "%zu", i);
        snprintf(rung, sizeof rung, "%lld", (long long)json_integer_value(json_object_get(tr, "rung")));
        snprintf(epochs, sizeof epochs, "%lld", (long long)json_integer_value(json_object_get(tr, "epochs_trained")));
        num_cell(json_object_get(tr, "metric"), "%.4f", metric, sizeof metric);
        params_text(json_object_get(tr, "params"), p, sizeof p);
        const char *cells[] = {trial, str(tr, "job", "-"), str(tr, "state", "?"), rung, epochs, metric, p};
        table_add(t, cells);
    }
    table_print(t, stdout);
    table_free(t);
    print_exploits(json_object_get(e, "trials"));
}

int cmd_experiment(cli_ctx_t *cx)
{
    const cli_args_t *a = cx->args;
    const char *sub = a->arg, *arg = a->arg2;
    int submit = strcmp(sub, "submit") == 0, ls = strcmp(sub, "ls") == 0, get = strcmp(sub, "get") == 0;
    int cancel = strcmp(sub, "cancel") == 0;
    if (!submit && !ls && !get && !cancel) return usage("unknown subcommand");
    if (ls && arg) return usage("ls takes no argument");
    if (!ls && !arg) return usage(submit ? "submit needs a FILE" : "an experiment ID is needed");
    char path[512];
    json_t *out = NULL;
    int rc;
    if (ls) {
        snprintf(path, sizeof path, "/api/v1/experiments?limit=%ld", a->limit > 0 ? a->limit : 50);
        rc = exp_call(cx, "GET", path, NULL, 0, &out);
    } else if (submit) {
        size_t len = 0;
        char *body = read_body(arg, &len);
        if (!body) return CLI_EXIT_USAGE;
        rc = exp_call(cx, "POST", "/api/v1/experiments", body, len, &out);
        free(body);
    } else {
        if (client_item_path(path, sizeof path, "/api/v1/experiments/", arg, "") != 0) return usage("ID too long");
        rc = exp_call(cx, cancel ? "DELETE" : "GET", path, NULL, 0, &out);
    }
    if (rc) return rc;
    if (a->json) fmt_json(stdout, out);
    else if (ls) print_list(out, wall_now());
    else if (get) print_one(out);
    else printf("%s: %s\n", str(out, "id", arg), str(out, "state", "?"));
    json_decref(out);
    return CLI_EXIT_OK;
}
