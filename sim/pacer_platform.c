/* sim/pacer_platform.c - build/pacer-platform: writes SimGrid platform files for
 * build/pacer-sim (sim/platform.h describes their shape).
 *
 *   pacer-platform --slowdown 1,1,2,4 [--ps] [link options] [--out FILE]
 *   pacer-platform --workers N [--gpus-per-node K] [--ps] [link options] [--out FILE]
 *   pacer-platform --redis URL --model NAME [--device D] [--ps] [link options] [--out FILE]
 *
 * The first two generate from the same fields as a spec's "simulate" section (and are
 * validated by the same table, so the bounds and messages are the spec's). The third
 * reads the node profiles the coordinator keeps in Redis (pacer:profiles, one hash
 * pacer:profile:{host}:{device}:{model} each; docs/REDIS.md) and makes one host per
 * profiled (host, device) with the speed it measured: samples_per_s x the model's FLOPs
 * per training sample (sim/cost.h), so in a deterministic simulation each host trains at
 * its profiled rate. Hosts come in name order; the file's comment records the command. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "cost.h"
#include "model.h"
#include "platform.h"
#include "redis_report.h"
#include "spec.h"

#define PROFILE_SPS_MAX 1e9 /* samples/s: anything above is not a measurement */

/* The cost model's figures of model: its catalog entry (a built-in row is model_describe's,
 * generated at build time). 0, or -1 with err naming the known models. */
static int model_figures(const char *model, catalog_model_t *out, char *err, size_t errlen)
{
    if (catalog_model_get(model, out) == 0) return 0;
    char known[512];
    catalog_model_names(known, sizeof known, "", 0);
    snprintf(err, errlen, "model: unknown model '%.64s' (known: %s)", model, known);
    return -1;
}

static const struct option OPTIONS[] = {
    {"slowdown", required_argument, NULL, 'S'},
    {"workers", required_argument, NULL, 'n'},
    {"ps", no_argument, NULL, 'p'},
    {"gflops", required_argument, NULL, 'g'},
    {"bandwidth-gbps", required_argument, NULL, 'b'},
    {"latency-us", required_argument, NULL, 'l'},
    {"gpus-per-node", required_argument, NULL, 'k'},
    {"intra-bandwidth-gbps", required_argument, NULL, 'B'},
    {"intra-latency-us", required_argument, NULL, 'L'},
    {"redis", required_argument, NULL, 'r'},
    {"model", required_argument, NULL, 'M'},
    {"device", required_argument, NULL, 'd'},
    {"precision", required_argument, NULL, 'P'},
    {"out", required_argument, NULL, 'o'},
    {"cost", required_argument, NULL, 'c'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: pacer-platform --slowdown F0,F1,... | --workers N  [options] [--out FILE]\n"
               "       pacer-platform --redis URL --model NAME [--device D] [options] [--out FILE]\n"
               "       pacer-platform --cost MODEL\n"
               "\n"
               "Writes a SimGrid platform file for pacer-sim (\"simulate\": {\"platform\": FILE}).\n"
               "\n"
               "  --slowdown LIST           one host per worker at gflops / F_i (as simulate.slowdown)\n"
               "  --workers N               N equal hosts\n"
               "  --gpus-per-node K         K workers per node: k-core hosts, intra-node links\n"
               "  --redis URL --model NAME  one host per node profile the coordinator measured for\n"
               "                            that model (pacer:profile:*), at its samples/s\n"
               "  --device D                only profiles of that device (cpu, cuda)\n"
               "  --precision P             the profiles of jobs of that precision (fp32, the default,\n"
               "                            or bf16: a CPU's bf16 profile, device cpu-bf16, is its speed)\n"
               "  --ps                      add a host \"ps\" for the parameter server\n"
               "  --gflops G                speed of a slowdown-1 host, Gflop/s (default 10)\n"
               "  --bandwidth-gbps B        each node's link, Gbit/s (default 10)\n"
               "  --latency-us L            one-way latency between nodes, us (default 5)\n"
               "  --intra-bandwidth-gbps B  between workers of one node, Gbit/s (default 200)\n"
               "  --intra-latency-us L      between workers of one node, us (default 1)\n"
               "  --out FILE                write there instead of standard output\n"
               "  --cost MODEL              print the cost model's FLOPs for MODEL as JSON (forward and\n"
               "                            forward + backward per sample, one optimizer step), what\n"
               "                            a deterministic simulation charges: calibrating a host speed\n"
               "                            from a measured step needs them (bench/sim_validate.sh)\n"
               "\n"
               "Exit status: 0 written, 2 bad options or profiles, 1 Redis unreachable or a write error.\n");
}

/* Number options go through the spec table, so bounds and messages are the spec's. */
static int set_number(json_t *sim, const char *key, const char *text, int integer)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || *end || !isfinite(v)) {
        fprintf(stderr, "pacer-platform: simulate.%s: '%s' is not a number\n", key, text);
        return -1;
    }
    json_object_set_new(sim, key,
                        integer && v == floor(v) && fabs(v) < 1e9 ? json_integer((json_int_t)v) : json_real(v));
    return 0;
}

static int parse_list(json_t *sim, const char *text)
{
    json_t *arr = json_array();
    const char *p = text;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end && *end != ',') || !isfinite(v)) {
            fprintf(stderr, "pacer-platform: --slowdown: '%s' must be numbers separated by commas\n", text);
            json_decref(arr);
            return -1;
        }
        json_array_append_new(arr, json_real(v));
        p = *end ? end + 1 : end;
    }
    json_object_set_new(sim, "slowdown", arr);
    return (int)json_array_size(arr);
}

static int host_name_ok(const char *s)
{
    if (!*s || strlen(s) >= PLATFORM_NAME_MAX - 8) return 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-'))
            return 0;
    }
    return 1;
}

typedef struct {
    char host[PLATFORM_NAME_MAX], device[16];
    double sps;
} profile_t;

static int by_host(const void *a, const void *b)
{
    const profile_t *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    return c ? c : strcmp(x->device, y->device);
}

/* Whether a profile of device dev is one a job of s's precision runs at, on `device` when
 * given: a bf16 job's CPU ranks have profiles of their own (spec_profile_device), which an
 * fp32 platform leaves out and a bf16 one takes instead of the fp32 ones. */
static int profile_wanted(const job_spec_t *s, const char *dev, const char *device)
{
    static const char *const DEVICES[] = {"cpu", "cuda"};
    char want[32];
    for (size_t i = 0; i < sizeof DEVICES / sizeof DEVICES[0]; i++) {
        if (device && strcmp(device, DEVICES[i]) != 0) continue;
        spec_profile_device(s, DEVICES[i], want, sizeof want);
        if (strcmp(dev, want) == 0) return 1;
    }
    return 0;
}

/* Hosts from the coordinator's profiles of `model` (and `device`, when given) at s's
 * precision. Every field read from Redis is checked before use. Returns the host count or
 * -1/-2. */
static int from_profiles(const char *url, const char *model, const char *device, const job_spec_t *s, platform_t *p)
{
    char err[512];
    redis_url_t u;
    if (redis_url_parse(url, &u, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-platform: --redis: %s\n", err);
        return -2;
    }
    redisContext *c = redis_url_connect(&u, 2.0, err, sizeof err);
    if (!c) {
        fprintf(stderr, "pacer-platform: %s\n", err);
        return -1;
    }
    static profile_t prof[PLATFORM_MAX_HOSTS];
    int n = 0, rc = -2;
    redisReply *keys = redisCommand(c, "SMEMBERS pacer:profiles");
    if (!keys || keys->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "pacer-platform: Redis: SMEMBERS pacer:profiles: %s\n",
                keys && keys->type == REDIS_REPLY_ERROR ? keys->str
                : c->errstr[0]                          ? c->errstr
                                                        : "not a set");
        rc = keys ? -2 : -1;
        goto out;
    }
    for (size_t i = 0; i < keys->elements; i++) {
        const redisReply *k = keys->element[i];
        if (k->type != REDIS_REPLY_STRING) continue;
        redisReply *h = redisCommand(c, "HMGET %b host device model samples_per_s", k->str, (size_t)k->len);
        if (!h) {
            fprintf(stderr, "pacer-platform: Redis: %s\n", c->errstr);
            rc = -1;
            goto out;
        }
        int ok = h->type == REDIS_REPLY_ARRAY && h->elements == 4;
        for (size_t j = 0; ok && j < 4; j++) ok = h->element[j]->type == REDIS_REPLY_STRING;
        if (!ok) {
            freeReplyObject(h);
            continue; /* the key vanished between the two commands, or is not a profile */
        }
        const char *host = h->element[0]->str, *dev = h->element[1]->str, *mod = h->element[2]->str;
        if (strcmp(mod, model) != 0 || !profile_wanted(s, dev, device)) {
            freeReplyObject(h);
            continue;
        }
        char *end;
        double sps = strtod(h->element[3]->str, &end);
        if (!host_name_ok(host) || strlen(dev) >= sizeof prof[0].device || !host_name_ok(dev) ||
            end == h->element[3]->str || *end || !(sps > 0) || !(sps <= PROFILE_SPS_MAX)) {
            fprintf(stderr,
                    "pacer-platform: Redis: %.*s: not a usable profile (host and device must be "
                    "[A-Za-z0-9._-], samples_per_s a number in (0, %g])\n",
                    (int)(k->len < 200 ? k->len : 200), k->str, PROFILE_SPS_MAX);
            freeReplyObject(h);
            goto out;
        }
        if (n == PLATFORM_MAX_HOSTS - 1) {
            fprintf(stderr, "pacer-platform: more than %d profiles\n", PLATFORM_MAX_HOSTS - 1);
            freeReplyObject(h);
            goto out;
        }
        snprintf(prof[n].host, sizeof prof[n].host, "%s", host);
        snprintf(prof[n].device, sizeof prof[n].device, "%s", dev);
        prof[n].sps = sps;
        n++;
        freeReplyObject(h);
    }
    if (n == 0) {
        fprintf(stderr,
                "pacer-platform: Redis has no profile for model %s%s%s at precision %s (profiles are "
                "written when a job ends; docs/REDIS.md)\n",
                model, device ? " on device " : "", device ? device : "", s->precision);
        goto out;
    }
    qsort(prof, (size_t)n, sizeof prof[0], by_host);

    catalog_model_t m;
    if (model_figures(model, &m, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-platform: --model: %s\n", err);
        goto out;
    }
    double flops = cost_train_flops(&m);
    for (int i = 0; i < n; i++) {
        platform_host_t *ph = &p->hosts[p->nhosts++];
        /* A host profiled on two devices becomes two hosts. */
        int twice = (i > 0 && strcmp(prof[i - 1].host, prof[i].host) == 0) ||
                    (i + 1 < n && strcmp(prof[i + 1].host, prof[i].host) == 0);
        if (twice) snprintf(ph->name, sizeof ph->name, "%.40s-%.15s", prof[i].host, prof[i].device);
        else snprintf(ph->name, sizeof ph->name, "%.56s", prof[i].host);
        ph->speed = prof[i].sps * flops;
        ph->cores = 1;
    }
    rc = n;
out:
    freeReplyObject(keys);
    redisFree(c);
    return rc;
}

/* --cost MODEL: the cost model's figures, for scripts that turn a measured step into a
 * host speed. update_flops is the optimizer of a spec that names none (spec_defaults);
 * update_flops_by_optimizer has every rule of sim/cost.h. */
static int print_cost(const char *model)
{
    catalog_model_t m;
    char err[1024];
    if (model_figures(model, &m, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-platform: --cost: %s\n", err);
        return 2;
    }
    static job_spec_t spec;
    spec_defaults(&spec);
    printf("{\"model\": \"%s\", \"params\": %ld, \"forward_flops\": %.17g, \"train_flops\": %.17g, "
           "\"update_flops\": %.17g, \"update_flops_by_optimizer\": {",
           m.name, m.params, cost_forward_flops(&m), cost_train_flops(&m), cost_update_flops(&m, &spec));
    for (int o = 0; o < COST_OPTIMIZER_N; o++)
        printf("%s\"%s\": %.17g", o ? ", " : "", cost_optimizer_name((cost_optimizer_t)o),
               cost_optimizer_flops_per_param((cost_optimizer_t)o) * (double)m.params);
    printf("}}\n");
    return 0;
}

int main(int argc, char **argv)
{
    /* A minimal spec around the options: the table validates them as it does a spec. */
    json_t *doc = json_pack("{s:s, s:{s:s}, s:{}}", "model", "lenet5", "algorithm", "name", "ssgd", "simulate");
    json_t *sim = json_object_get(doc, "simulate");
    const char *out = NULL, *url = NULL, *model = NULL, *device = NULL;
    int with_ps = 0, workers = 0, status = 2, c;
    while ((c = getopt_long(argc, argv, "", OPTIONS, NULL)) != -1) {
        int rc = 0;
        switch (c) {
        case 'S':
            rc = parse_list(sim, optarg);
            if (rc > 0) workers = rc;
            break;
        case 'n': rc = set_number(doc, "workers", optarg, 1); break;
        case 'p': with_ps = 1; break;
        case 'g': rc = set_number(sim, "gflops", optarg, 0); break;
        case 'b': rc = set_number(sim, "bandwidth_gbps", optarg, 0); break;
        case 'l': rc = set_number(sim, "latency_us", optarg, 0); break;
        case 'k': rc = set_number(sim, "gpus_per_node", optarg, 1); break;
        case 'B': rc = set_number(sim, "intra_bandwidth_gbps", optarg, 0); break;
        case 'L': rc = set_number(sim, "intra_latency_us", optarg, 0); break;
        case 'r': url = optarg; break;
        case 'M': model = optarg; break;
        case 'd': device = optarg; break;
        case 'P': json_object_set_new(doc, "precision", json_string(optarg)); break;
        case 'o': out = optarg; break;
        case 'c': json_decref(doc); return print_cost(optarg);
        case 'h':
            usage(stdout);
            json_decref(doc);
            return 0;
        default:
            usage(stderr);
            json_decref(doc);
            return 2;
        }
        if (rc < 0) goto done;
    }
    if (optind != argc) {
        fprintf(stderr, "pacer-platform: unexpected argument '%s'\n", argv[optind]);
        goto done;
    }
    int have_workers = workers > 0 || json_object_get(doc, "workers");
    if (!!url + !!have_workers != 1 || !!url != !!model) {
        fprintf(stderr, "pacer-platform: give --slowdown or --workers, or --redis with --model\n");
        usage(stderr);
        goto done;
    }
    if (device && strcmp(device, "cpu") != 0 && strcmp(device, "cuda") != 0) {
        fprintf(stderr,
                "pacer-platform: --device: '%.40s' is not cpu or cuda (a bf16 job's CPU profiles: "
                "--precision bf16)\n",
                device);
        goto done;
    }
    if (workers > 0 && !json_object_get(doc, "workers")) json_object_set_new(doc, "workers", json_integer(workers));

    char *text = json_dumps(doc, JSON_COMPACT);
    static job_spec_t spec;
    char err[1024];
    int prc = text ? spec_parse(text, &spec, err, sizeof err) : -1;
    free(text);
    if (prc != 0) {
        fprintf(stderr, "pacer-platform: %s\n", err);
        goto done;
    }
    static platform_t p;
    if (url) {
        memset(&p, 0, sizeof p);
        if (with_ps) {
            snprintf(p.hosts[0].name, sizeof p.hosts[0].name, "ps");
            p.hosts[0].cores = 1;
            p.nhosts = 1;
            p.has_ps = 1;
        }
        int n = from_profiles(url, model, device, &spec, &p);
        if (n < 0) {
            status = n == -1 ? 1 : 2;
            goto done;
        }
        if (with_ps) { /* the parameter server on a host as fast as the fastest node */
            for (int i = 1; i < p.nhosts; i++)
                if (p.hosts[i].speed > p.hosts[0].speed) p.hosts[0].speed = p.hosts[i].speed;
        }
        p.bw_bps = spec.simulate.bandwidth_gbps * 1e9 / 8;
        p.lat_s = spec.simulate.latency_us * 1e-6;
        p.intra_bw_bps = spec.simulate.intra_bandwidth_gbps * 1e9 / 8;
        p.intra_lat_s = spec.simulate.intra_latency_us * 1e-6;
    } else {
        platform_from_spec(&spec, with_ps, &p);
    }
    /* The comment records how to make the file again. */
    size_t used = (size_t)snprintf(p.comment, sizeof p.comment, "pacer-platform");
    for (int i = 1; i < argc && used < sizeof p.comment; i++) {
        if (out && i > 1 && strcmp(argv[i - 1], "--out") == 0) continue;
        if (strcmp(argv[i], "--out") == 0 || strncmp(argv[i], "--out=", 6) == 0) continue;
        used += (size_t)snprintf(p.comment + used, sizeof p.comment - used, " %s", argv[i]);
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pacer-platform: %s: cannot write\n", out);
        status = 1;
        goto done;
    }
    int wrc = platform_write(&p, f, err, sizeof err);
    if ((out && fclose(f) != 0) || wrc != 0) {
        fprintf(stderr, "pacer-platform: %s\n", wrc ? err : "write error");
        status = 1;
        goto done;
    }
    status = 0;
done:
    json_decref(doc);
    return status;
}
