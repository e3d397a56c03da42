/* coordinator/preflight.c - see preflight.h. */
#include "preflight.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "catalog.h"
#include "clock.h"
#include "clog.h"
#include "coord_internal.h"
#include "fs.h"
#include "hosts.h"
#include "jobstore.h"
#include "jsonbody.h"
#include "launch.h"
#include "launcher.h"
#include "redis_keys.h"
#include "supervise.h"
#include "tickconn.h"

#define BPATH (PATH_MAX + 64) /* STATE_DIR/benchmarks/{i}/{leaf} always fits */

int preflight_mode_parse(const char *s)
{
    if (!s || !*s || strcmp(s, "auto") == 0) return PREFLIGHT_AUTO;
    if (strcmp(s, "always") == 0) return PREFLIGHT_ALWAYS;
    if (strcmp(s, "off") == 0) return PREFLIGHT_OFF;
    return -1;
}

int preflight_busy(const coordinator_t *c) { return c->preflight->round.active; }

/* STATE_DIR/benchmarks[/{i}[/leaf]] (i < 0: the directory itself). */
static void bench_path(const coordinator_t *c, int i, const char *leaf, char *out, size_t len)
{
    if (i < 0) snprintf(out, len, "%s/benchmarks%s%s", c->state_dir, leaf ? "/" : "", leaf ? leaf : "");
    else snprintf(out, len, "%s/benchmarks/%d%s%s", c->state_dir, i, leaf ? "/" : "", leaf ? leaf : "");
}

/* ---- the output ---------------------------------------------------------------------- */

int preflight_parse_output(const char *text, size_t len, const char *model, double *speed, char *device, size_t devlen,
                           char *why, size_t whylen)
{
    static const char TAG[] = "{\"benchmark\":";
    const char *line = NULL;
    size_t linelen = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
        if (l >= sizeof TAG - 1 && memcmp(text + i, TAG, sizeof TAG - 1) == 0) {
            line = text + i;
            linelen = l;
        }
        i += l + 1;
    }
    if (!line) {
        snprintf(why, whylen, "bad output: no {\"benchmark\": ...} line");
        return -1;
    }
    json_error_t jerr;
    json_t *root = json_loadb(line, linelen, JSON_REJECT_DUPLICATES, &jerr);
    json_t *b = json_object_get(root, "benchmark");
    int rc = -1;
    if (!root || !json_is_object(b)) {
        snprintf(why, whylen, "bad output: the benchmark line is not a JSON object: %.100s",
                 root ? "" : jsonbody_text(&jerr));
        goto out;
    }
    const char *m = json_string_value(json_object_get(b, "model"));
    const char *d = json_string_value(json_object_get(b, "device"));
    json_t *v = json_object_get(b, "samples_per_s");
    if (!m || strcmp(m, model) != 0) {
        snprintf(why, whylen, "bad output: model is %.64s, not %.64s", m ? m : "missing", model);
        goto out;
    }
    size_t dl = d ? strlen(d) : 0;
    int dev_ok = dl > 0 && dl < devlen;
    for (size_t i = 0; dev_ok && i < dl; i++) dev_ok = islower((unsigned char)d[i]) || isdigit((unsigned char)d[i]);
    if (!dev_ok) {
        snprintf(why, whylen, "bad output: device is not a short lower-case name");
        goto out;
    }
    double s = json_is_number(v) ? json_number_value(v) : 0;
    if (!(s > 0) || !isfinite(s) || s > 1e12) {
        snprintf(why, whylen, "bad output: samples_per_s is not a positive number");
        goto out;
    }
    *speed = s;
    snprintf(device, devlen, "%s", d);
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* What a failed benchmark said: its last "pacer-worker:" line, else the last line that
 * is not the launcher's header or a rule of dashes; printable, at most len - 1 bytes. */
static void last_words(const char *text, size_t len, char *out, size_t outlen)
{
    const char *best = NULL, *any = NULL;
    size_t bestlen = 0, anylen = 0;
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t l = nl ? (size_t)(nl - (text + i)) : len - i;
        const char *s = text + i;
        if (l >= 13 && memcmp(s, "pacer-worker:", 13) == 0) best = s, bestlen = l;
        else if (l > 0 && s[0] != '=' && s[0] != '-' && s[0] != '{') any = s, anylen = l;
        i += l + 1;
    }
    if (!best) best = any, bestlen = anylen;
    size_t k = 0;
    for (size_t i = 0; best && i < bestlen && k + 1 < outlen; i++)
        out[k++] = isprint((unsigned char)best[i]) ? best[i] : '?';
    out[k] = 0;
}

/* ---- a round ------------------------------------------------------------------------- */

/* Starts a round of s on the named hosts. Returns 0, or -1 with err (nothing runs). */
static int round_start(coordinator_t *c, const job_spec_t *s, const char *const *names, int n, const char *origin,
                       double now, char *err, size_t errlen)
{
    char dir[BPATH], specp[BPATH];
    preflight_t *pf = &c->preflight->round;
    char *text = NULL;
    if (n < 1) {
        snprintf(err, errlen, "no host to benchmark");
        return -1;
    }
    pf->spec = malloc(sizeof *pf->spec);
    pf->hosts = calloc((size_t)n, sizeof *pf->hosts);
    if (!pf->spec || !pf->hosts) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    *pf->spec = *s;
    bench_path(c, -1, NULL, dir, sizeof dir);
    bench_path(c, -1, "spec.json", specp, sizeof specp);
    text = spec_to_json(pf->spec);
    if (fs_mkdir_p(dir, 0755) != 0 || !text || fs_atomic_write_fixed(specp, text, strlen(text), 0644) != 0) {
        snprintf(err, errlen, "%.300s: cannot write the benchmark's spec: %s", specp,
                 text ? strerror(errno) : "out of memory");
        goto fail;
    }
    free(text);
    text = NULL;
    pf->active = 1;
    pf->round++;
    pf->n = n;
    pf->started = now;
    pf->deadline = now + c->cfg.preflight_timeout_s;
    snprintf(pf->origin, sizeof pf->origin, "%s", origin);
    char steps[16], id[32];
    snprintf(steps, sizeof steps, "%d", c->cfg.preflight_steps);
    const char *argv[] = {c->worker, "--spec", specp, "--benchmark", steps, NULL};
    for (int i = 0; i < n; i++) {
        preflight_host_t *ph = &pf->hosts[i];
        host_t *h = hosts_find(c->hosts, names[i]);
        snprintf(ph->host, sizeof ph->host, "%s", names[i]);
        char hdir[BPATH], log[BPATH], ecp[BPATH], hp[BPATH], why[512] = "";
        bench_path(c, i, NULL, hdir, sizeof hdir);
        bench_path(c, i, "log", log, sizeof log);
        bench_path(c, i, "exit_code", ecp, sizeof ecp);
        bench_path(c, i, "handle", hp, sizeof hp);
        unlink(ecp);
        int fd = fs_mkdir_p(hdir, 0755) == 0 ? open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : -1;
        if (fd >= 0) close(fd);
        snprintf(id, sizeof id, "bench-%d", i);
        const char *one[1] = {ph->host};
        launch_req_t req = {.id = id,
                            .attempt = (int)pf->round,
                            .world = 1,
                            .argv = argv,
                            .dir = hdir,
                            .log_path = log,
                            .exit_code_path = ecp,
                            .handle_path = hp,
                            .hosts = one,
                            .nhosts = 1};
        if (h) {
            memset(&h->bench, 0, sizeof h->bench);
            h->bench.running = 1;
            snprintf(h->bench.model, sizeof h->bench.model, "%s", s->model);
        }
        if (fd < 0) snprintf(why, sizeof why, "%.300s: %s", log, strerror(errno));
        if (fd < 0 || launcher_start(c->launcher, &req, &ph->h, why, sizeof why) != 0) {
            clog_printf("benchmark on %s: cannot start: %s", ph->host, why);
            if (h) {
                h->bench.running = 0;
                h->bench.time = now;
                snprintf(h->bench.error, sizeof h->bench.error, "cannot start: %.200s", why);
            }
            continue;
        }
        ph->running = 1;
    }
    clog_printf("benchmark round %ld (%s): %s on %d host%s, %d step%s each", pf->round, origin, s->model, n,
                n == 1 ? "" : "s", c->cfg.preflight_steps, c->cfg.preflight_steps == 1 ? "" : "s");
    return 0;
fail:
    free(text);
    free(pf->spec);
    free(pf->hosts);
    pf->spec = NULL;
    pf->hosts = NULL;
    return -1;
}

/* The profile of host for the round's model: the benchmark's speed. */
static void store_profile(coordinator_t *c, const char *host, const char *device, const char *model, double v,
                          double now)
{
    if (!c->conn->rc) return;
    char key[1024], val[32], t[32];
    snprintf(key, sizeof key, KEY_PROFILE, host, device, model);
    snprintf(val, sizeof val, "%.1f", v);
    snprintf(t, sizeof t, "%.3f", now);
    redisAppendCommand(c->conn->rc,
                       "HSET %s samples_per_s %s updated %s host %s device %s model %s benchmark_samples_per_s %s "
                       "benchmark_time %s",
                       key, val, t, host, device, model, val, t);
    redisAppendCommand(c->conn->rc, "SADD %s %s", KEY_PROFILES, key);
    for (int i = 0; i < 2; i++) {
        redisReply *x = NULL;
        if (redisGetReply(c->conn->rc, (void **)&x) != REDIS_OK || !x) {
            tickconn_broken(c, "benchmark profile");
            return;
        }
        freeReplyObject(x);
    }
}

/* The round is over: verdicts over every host last benchmarked with this model, states
 * for this round's hosts, the event. */
static void round_finish(coordinator_t *c, double now)
{
    preflight_t *pf = &c->preflight->round;
    const char *model = pf->spec->model;
    double *speed = calloc((size_t)c->hosts->n + 1, sizeof *speed),
           *ratio = calloc((size_t)c->hosts->n + 1, sizeof *ratio);
    int *slow = calloc((size_t)c->hosts->n + 1, sizeof *slow);
    json_t *list = json_array();
    if (speed && ratio && slow) {
        for (int i = 0; i < c->hosts->n; i++) {
            const host_bench_t *b = &c->hosts->list[i].bench;
            speed[i] = b->time > 0 && strcmp(b->model, model) == 0 ? b->samples_per_s : 0;
        }
        hosts_classify(speed, c->hosts->n, ratio, slow);
    }
    /* Failing on every host says more about what was measured (a spec whose data set is
     * nowhere, a worker that cannot run at all) than about the hosts: their states stay,
     * and a job waiting for the round launches and fails with its own error, instead of
     * every host being shut out of every later job. */
    int passed = 0;
    for (int k = 0; k < pf->n; k++) {
        const host_t *h = hosts_find(c->hosts, pf->hosts[k].host);
        passed += h && !h->bench.error[0];
    }
    if (!passed)
        clog_printf("benchmark of %s failed on every host: host states unchanged (the model, its data set or the "
                    "worker, not a host, is the likely cause)",
                    model);
    for (int k = 0; k < pf->n; k++) {
        host_t *h = hosts_find(c->hosts, pf->hosts[k].host);
        if (!h) continue; /* removed by a reload meanwhile */
        int i = (int)(h - c->hosts->list);
        char why[256];
        if (ratio) h->bench.ratio = ratio[i];
        if (h->bench.error[0]) {
            snprintf(why, sizeof why, "benchmark of %.40s failed: %.190s", model, h->bench.error);
            if (h->state != HOST_DOWN && passed) hosts_set_state(c, h, HOST_FAILING, why, now);
        } else if (slow && slow[i]) {
            snprintf(why, sizeof why, "benchmark of %.40s: %.1f samples/s, %.2f of the median", model,
                     h->bench.samples_per_s, h->bench.ratio);
            if (h->state != HOST_DOWN) hosts_set_state(c, h, HOST_SLOW, why, now);
        } else if (h->state == HOST_SLOW || (h->state == HOST_FAILING && !h->net_failing)) {
            /* A benchmark is one process: it says nothing of the job's network, whose
             * probe (netprobe.h) alone brings a host it failed back. */
            hosts_set_state(c, h, HOST_UP, "", now);
        }
        clog_printf("benchmark of %s on %s: %s", model, h->name,
                    h->bench.error[0] ? h->bench.error
                                      : (snprintf(why, sizeof why, "%.1f samples/s on %s, %.2f of the median",
                                                  h->bench.samples_per_s, h->bench.device, h->bench.ratio),
                                         why));
        /* A host that failed has its error, and no speed or ratio (not a 0). */
        json_t *o = json_pack("{s:s, s:s}", "host", h->name, "state", host_state_name(h->state));
        if (o && h->bench.device[0]) json_object_set_new(o, "device", json_string(h->bench.device));
        if (o && h->bench.error[0]) json_object_set_new(o, "error", json_string(h->bench.error));
        else if (o) {
            json_object_set_new(o, "samples_per_s", json_real(h->bench.samples_per_s));
            json_object_set_new(o, "ratio", json_real(h->bench.ratio));
        }
        if (o) json_array_append_new(list, o);
    }
    if (c->conn->rc && list) {
        json_t *ev = json_pack("{s:s, s:s, s:s, s:O, s:f}", "type", "benchmark", "model", model, "origin", pf->origin,
                               "hosts", list, "time", now);
        if (ev) tickconn_check(c, jobstore_event(c->conn->rc, ev), "benchmark event");
        json_decref(ev);
    }
    json_decref(list);
    clog_printf("benchmark round %ld (%s): done in %.1f s", pf->round, pf->origin, now - pf->started);
    free(speed);
    free(ratio);
    free(slow);
    free(pf->spec);
    free(pf->hosts);
    pf->spec = NULL;
    pf->hosts = NULL;
    pf->n = 0;
    pf->active = 0;
}

/* One host's benchmark has ended (or timed out: timed_out). */
static void host_done(coordinator_t *c, int i, const launch_status_t *st, int timed_out, double now)
{
    preflight_t *pf = &c->preflight->round;
    preflight_host_t *ph = &pf->hosts[i];
    char log[BPATH];
    bench_path(c, i, "log", log, sizeof log);
    launcher_reap(c->launcher, &ph->h);
    ph->running = 0;
    host_t *h = hosts_find(c->hosts, ph->host);
    if (!h) return;
    host_bench_t *b = &h->bench;
    b->running = 0;
    b->time = now;
    b->samples_per_s = 0;
    b->ratio = NAN; /* until the round ends (round_finish) */
    b->error[0] = 0;
    char *text = malloc(PREFLIGHT_LOG_MAX);
    size_t len = text ? log_read_tail(log, text, PREFLIGHT_LOG_MAX) : 0;
    char why[256] = "", said[200] = "";
    if (text) last_words(text, len, said, sizeof said);
    if (timed_out) {
        snprintf(b->error, sizeof b->error, "timed out after %.0f s", c->cfg.preflight_timeout_s);
    } else if (st->outcome != SV_EXITED || st->code != 0) {
        snprintf(b->error, sizeof b->error, "%s %d%s%.200s", st->outcome == SV_EXITED ? "exit" : "signal", st->code,
                 said[0] ? ": " : "", said);
    } else if (!text) {
        snprintf(b->error, sizeof b->error, "out of memory");
    } else if (preflight_parse_output(text, len, pf->spec->model, &b->samples_per_s, b->device, sizeof b->device, why,
                                      sizeof why) != 0) {
        b->samples_per_s = 0;
        snprintf(b->error, sizeof b->error, "%s", why);
    } else {
        char dev[32];
        spec_profile_device(pf->spec, b->device, dev, sizeof dev);
        store_profile(c, h->name, dev, pf->spec->model, b->samples_per_s, now);
    }
    free(text);
}

void preflight_tick(coordinator_t *c, double now)
{
    preflight_t *pf = &c->preflight->round;
    /* A request from the API (coord_cluster_benchmark). */
    char model[SPEC_NAME_MAX], dataset[SPEC_NAME_MAX], *names_text = NULL;
    pthread_mutex_lock(&c->lock);
    long asked = c->preflight->bench_asked;
    if (asked != c->preflight->bench_done) {
        names_text = strdup(c->preflight->bench_hosts ? c->preflight->bench_hosts : "");
        snprintf(model, sizeof model, "%s", c->preflight->bench_model);
        snprintf(dataset, sizeof dataset, "%s", c->preflight->bench_dataset);
    }
    pthread_mutex_unlock(&c->lock);
    if (asked != c->preflight->bench_done) {
        char err[512] = "";
        int code = COORD_OK;
        json_t *result = NULL;
        const char **names = calloc((size_t)c->hosts->n + 1, sizeof *names);
        job_spec_t *s = malloc(sizeof *s);
        /* The spec's defaults for that model (batch size, device), on the data set asked
         * for, else the one the catalog trains the model on. */
        catalog_model_t cm;
        if (!model[0]) snprintf(model, sizeof model, "lenet5");
        if (!dataset[0] && catalog_model_get(model, &cm) == 0) snprintf(dataset, sizeof dataset, "%s", cm.dataset);
        json_t *sj = json_pack("{s:s}", "model", model);
        if (sj && dataset[0]) json_object_set_new(sj, "dataset", json_pack("{s:s}", "name", dataset));
        char *spec_text = sj ? json_dumps(sj, JSON_COMPACT) : NULL;
        json_decref(sj);
        int n = 0;
        if (!names || !s || !names_text || !spec_text) {
            code = COORD_EINTERNAL;
            snprintf(err, sizeof err, "out of memory");
        } else if (spec_parse(spec_text, s, err, sizeof err) != 0) {
            code = COORD_EINVAL;
        } else if (!names_text[0]) {
            for (int i = 0; i < c->hosts->n; i++)
                if (c->hosts->list[i].state != HOST_DOWN) names[n++] = c->hosts->list[i].name;
            if (n == 0) {
                code = COORD_EINVAL;
                snprintf(err, sizeof err, "every host is down");
            }
        } else {
            for (char *save = NULL, *t = strtok_r(names_text, " ", &save); t && code == COORD_OK;
                 t = strtok_r(NULL, " ", &save)) {
                host_t *h = hosts_find(c->hosts, t);
                int dup = 0;
                for (int k = 0; k < n; k++) dup |= h && names[k] == h->name;
                if (!h) {
                    code = COORD_EINVAL;
                    snprintf(err, sizeof err, "hosts: %.200s is not a host of the cluster", t);
                } else if (h->state == HOST_DOWN) {
                    code = COORD_EINVAL;
                    snprintf(err, sizeof err, "hosts: %.200s is down (%.200s)", t, h->reason);
                } else if (!dup && n < c->hosts->n) {
                    names[n++] = h->name;
                }
            }
        }
        if (code == COORD_OK && pf->active) {
            code = COORD_ESTATE;
            snprintf(err, sizeof err, "a benchmark round (%s) is running: ask again when it is over", pf->origin);
        }
        if (code == COORD_OK && round_start(c, s, names, n, "api", now, err, sizeof err) != 0) code = COORD_EINTERNAL;
        if (code == COORD_OK) {
            json_t *hl = json_array();
            for (int i = 0; hl && i < n; i++) json_array_append_new(hl, json_string(names[i]));
            result = json_pack("{s:s, s:s, s:o, s:i, s:f}", "model", s->model, "dataset", s->dataset.name, "hosts",
                               hl ? hl : json_array(), "steps", c->cfg.preflight_steps, "started", now);
            if (!result) code = COORD_EINTERNAL;
        }
        free(names);
        free(s);
        free(spec_text);
        pthread_mutex_lock(&c->lock);
        c->preflight->bench_done = asked;
        c->preflight->bench_code = code;
        snprintf(c->preflight->bench_err, sizeof c->preflight->bench_err, "%s", err);
        json_decref(c->preflight->bench_result);
        c->preflight->bench_result = result;
        pthread_cond_broadcast(&c->preflight->bench_cond);
        pthread_mutex_unlock(&c->lock);
    }
    free(names_text);

    if (!pf->active) return;
    int running = 0;
    for (int i = 0; i < pf->n; i++) {
        preflight_host_t *ph = &pf->hosts[i];
        if (!ph->running) continue;
        char log[BPATH], ecp[BPATH];
        bench_path(c, i, "log", log, sizeof log);
        bench_path(c, i, "exit_code", ecp, sizeof ecp);
        launch_status_t st;
        memset(&st, 0, sizeof st);
        launcher_poll(c->launcher, &ph->h, ecp, log, now, &st);
        if (st.ended) {
            host_done(c, i, &st, 0, now);
        } else if (now >= pf->deadline) {
            launcher_stop(c->launcher, &ph->h, 1);
            host_done(c, i, &st, 1, now);
        } else {
            running++;
        }
    }
    if (!running) round_finish(c, now);
}

void preflight_stop(coordinator_t *c)
{
    preflight_t *pf = &c->preflight->round;
    for (int i = 0; pf->active && i < pf->n; i++) {
        if (!pf->hosts[i].running) continue;
        launcher_stop(c->launcher, &pf->hosts[i].h, 1);
        launcher_reap(c->launcher, &pf->hosts[i].h);
    }
    free(pf->spec);
    free(pf->hosts);
    memset(pf, 0, sizeof *pf);
}

/* ---- before a job ---------------------------------------------------------------------- */

/* Whether some of the n hosts has no profile for s's model: 1, 0, or -1 (Redis). */
static int profile_missing(coordinator_t *c, const job_spec_t *s, const char *const *names, int n)
{
    int autodev = strcmp(s->device, "auto") == 0;
    char dev[32];
    spec_profile_device(s, autodev ? "cpu" : s->device, dev, sizeof dev);
    for (int i = 0; i < n; i++) {
        char a[1024], b[1024];
        snprintf(a, sizeof a, KEY_PROFILE, names[i], dev, s->model);
        snprintf(b, sizeof b, KEY_PROFILE, names[i], "cuda", s->model);
        redisAppendCommand(c->conn->rc, "EXISTS %s %s", a, autodev ? b : a);
    }
    int missing = 0, broken = 0;
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;
        if (broken || redisGetReply(c->conn->rc, (void **)&r) != REDIS_OK || !r) {
            broken = 1;
            continue;
        }
        missing |= r->type == REDIS_REPLY_INTEGER && r->integer == 0;
        freeReplyObject(r);
    }
    if (broken) {
        tickconn_broken(c, "profiles");
        return -1;
    }
    return missing;
}

int preflight_for_job(coordinator_t *c, const job_spec_t *s, const char *id, double now)
{
    if (c->preflight->mode == PREFLIGHT_OFF || !c->conn->rc || c->hosts->n == 0) return 0;
    if (c->preflight->round.active) return 2;
    /* The hosts a job may use (up, slow), and those that failed a benchmark: this one may
     * pass. Down hosts are the probes' business. */
    const char **names = calloc((size_t)c->hosts->n, sizeof *names);
    const char **usable = calloc((size_t)c->hosts->n, sizeof *usable);
    int n = 0, nu = 0, rc = 0;
    if (!names || !usable) goto out;
    for (int i = 0; i < c->hosts->n; i++) {
        host_state_t st = c->hosts->list[i].state;
        if (st == HOST_DOWN) continue;
        names[n++] = c->hosts->list[i].name;
        if (st != HOST_FAILING) usable[nu++] = c->hosts->list[i].name;
    }
    if (c->preflight->mode == PREFLIGHT_AUTO) {
        /* One host: its ranks all run at one speed, so the plan is even whatever it is. */
        if (nu < 2 || profile_missing(c, s, usable, nu) != 1) goto out;
    }
    if (n == 0) goto out;
    char origin[64], err[512];
    snprintf(origin, sizeof origin, "job %s", id);
    if (round_start(c, s, names, n, origin, now, err, sizeof err) != 0) {
        clog_printf("job %s: no pre-flight benchmark: %s", id, err);
        goto out;
    }
    rc = 1;
out:
    free(names);
    free(usable);
    return rc;
}

/* ---- the API ------------------------------------------------------------------------- */

int coord_cluster_benchmark(coordinator_t *c, const char *model, const char *dataset, const char *const *hosts,
                            int nhosts, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!c->daemon) {
        snprintf(err, errlen, "only the coordinator daemon benchmarks hosts: ask its API");
        return COORD_ESTATE;
    }
    size_t need = 1;
    for (int i = 0; i < nhosts; i++) need += strlen(hosts[i]) + 1;
    char *list = malloc(need);
    if (!list) return COORD_EINTERNAL;
    list[0] = 0;
    for (int i = 0; i < nhosts; i++) {
        strcat(list, i ? " " : "");
        strcat(list, hosts[i]);
    }
    pthread_mutex_lock(&c->lock);
    /* One request at a time: a second waits until the tick has taken the first. */
    struct timespec ts;
    clock_wall_deadline(10.0, &ts);
    while (c->preflight->bench_done < c->preflight->bench_asked && !c->stopping)
        if (pthread_cond_timedwait(&c->preflight->bench_cond, &c->lock, &ts) != 0) break;
    int code = COORD_OK;
    if (c->preflight->bench_done < c->preflight->bench_asked) {
        free(list);
        pthread_mutex_unlock(&c->lock);
        snprintf(err, errlen, "the coordinator did not take the request within 10 s");
        return COORD_EUNAVAIL;
    }
    free(c->preflight->bench_hosts);
    c->preflight->bench_hosts = list;
    snprintf(c->preflight->bench_model, sizeof c->preflight->bench_model, "%s", model ? model : "");
    snprintf(c->preflight->bench_dataset, sizeof c->preflight->bench_dataset, "%s", dataset ? dataset : "");
    long mine = ++c->preflight->bench_asked;
    pthread_cond_signal(&c->cond);
    while (c->preflight->bench_done < mine && !c->stopping)
        if (pthread_cond_timedwait(&c->preflight->bench_cond, &c->lock, &ts) != 0) break;
    if (c->preflight->bench_done < mine) {
        snprintf(err, errlen, "the coordinator did not take the request within 10 s");
        code = COORD_EUNAVAIL;
    } else if (c->preflight->bench_code != COORD_OK) {
        snprintf(err, errlen, "%s", c->preflight->bench_err);
        code = c->preflight->bench_code;
    } else {
        *out = c->preflight->bench_result ? json_deep_copy(c->preflight->bench_result) : NULL;
        if (!*out) code = COORD_EINTERNAL;
    }
    pthread_mutex_unlock(&c->lock);
    return code;
}
