/* coordinator/hclass.c - see hclass.h. */
#include "hclass.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "redis_keys.h"

/* The last bucket of measured hosts: the slowest ones merged, leaving room for "unmeasured". */
#define HCLASS_BUCKET_LAST (POLICY_CLASSES_MAX - 2)

static const char *const bucket_names[HCLASS_BUCKET_LAST + 1] = {"x1",    "x1/2",  "x1/4", "x1/8",
                                                                 "x1/16", "x1/32", "x1/64"};

/* A profile reply field as a string of at most len - 1 bytes into out, cut at a NUL inside
 * (as a key naming it would be, dynbatch_parse_node's rule); 0 when it is not one or reads
 * empty (a field starting with a NUL: a host named "" would take another's profile). */
static int field_copy(const redisReply *r, char *out, size_t len)
{
    if (!r || r->type != REDIS_REPLY_STRING || r->len == 0 || (size_t)r->len >= len) return 0;
    memcpy(out, r->str, (size_t)r->len);
    out[r->len] = 0;
    return out[0] != 0;
}

int hclass_parse_profile(const redisReply *r, hclass_profile_t *out)
{
    char v[64], *end;
    memset(out, 0, sizeof *out);
    if (!r || r->type != REDIS_REPLY_ARRAY || (r->elements != 3 && r->elements != 4) ||
        !field_copy(r->element[0], out->host, sizeof out->host) ||
        !field_copy(r->element[1], out->model, sizeof out->model) || !field_copy(r->element[2], v, sizeof v))
        return 0;
    out->samples_per_s = strtod(v, &end);
    if (*end == 0 && isfinite(out->samples_per_s) && out->samples_per_s > 0) return 1;
    out->samples_per_s = 0;
    return 0;
}

/* Adds one profile (the fastest device's speed per (host, model) is kept). */
static void keep_profile(hclass_profile_t *p, int *n, const hclass_profile_t *x)
{
    for (int i = 0; i < *n; i++)
        if (strcmp(p[i].host, x->host) == 0 && strcmp(p[i].model, x->model) == 0) {
            if (x->samples_per_s > p[i].samples_per_s) p[i].samples_per_s = x->samples_per_s;
            return;
        }
    p[(*n)++] = *x;
}

int hclass_refresh(redisContext *rc, hclass_cache_t *cache, double now)
{
    if (cache->read_at > 0 && now - cache->read_at < HCLASS_REFRESH_S && now >= cache->read_at) return 0;
    if (!rc) return -1;
    redisReply *set = redisCommand(rc, "SMEMBERS %s", KEY_PROFILES);
    if (!set) return -1;
    int rc_out = 0;
    size_t n = set->type == REDIS_REPLY_ARRAY ? set->elements : 0;
    if (n > HCLASS_PROFILES_MAX) n = HCLASS_PROFILES_MAX;
    hclass_profile_t *p = calloc(n + 1, sizeof *p);
    int np = 0;
    if (!p) {
        freeReplyObject(set);
        return 0; /* out of memory: the old cache serves */
    }
    size_t sent = 0;
    for (size_t i = 0; i < n; i++) {
        const redisReply *k = set->element[i];
        if (k->type != REDIS_REPLY_STRING) continue;
        redisAppendCommand(rc, "HMGET %b host model samples_per_s device", k->str, (size_t)k->len);
        sent++;
    }
    for (size_t i = 0; i < sent; i++) {
        redisReply *r = NULL;
        if (redisGetReply(rc, (void **)&r) != REDIS_OK || !r) {
            rc_out = -1; /* the remaining replies are gone with the connection */
            break;
        }
        hclass_profile_t x;
        /* the classes rank hosts by their fp32 profiles: a bf16 one (spec_profile_device)
         * measures other units, whose gain differs from host to host */
        const int bf16 = r->type == REDIS_REPLY_ARRAY && r->elements == 4 &&
                         r->element[3]->type == REDIS_REPLY_STRING && strstr(r->element[3]->str, "-bf16") != NULL;
        if (!bf16 && hclass_parse_profile(r, &x)) keep_profile(p, &np, &x);
        freeReplyObject(r);
    }
    freeReplyObject(set);
    if (rc_out != 0) {
        free(p);
        return rc_out;
    }
    free(cache->p);
    cache->p = p;
    cache->n = np;
    cache->read_at = now;
    return 0;
}

void hclass_free(hclass_cache_t *cache)
{
    free(cache->p);
    memset(cache, 0, sizeof *cache);
}

/* A profile's speed of model on host; 0 when none is stored. */
static double hclass_profile_speed(const hclass_profile_t *p, int np, const char *host, const char *model)
{
    for (int i = 0; i < np; i++)
        if (strcmp(p[i].host, host) == 0 && strcmp(p[i].model, model) == 0) return p[i].samples_per_s;
    return 0;
}

/* The fastest usable host's speed of model (0: none profiled). */
static double fastest(const hclass_profile_t *p, int np, const char *const *hosts, const int *usable, int nhosts,
                      const char *model)
{
    double best = 0;
    for (int i = 0; i < nhosts; i++) {
        double v = usable[i] ? hclass_profile_speed(p, np, hosts[i], model) : 0;
        if (v > best) best = v;
    }
    return best;
}

/* Host i's bucket (0 = fastest), or -1 when none of its profiles applies. */
static int bucket_of(const hclass_profile_t *p, int np, const char *const *hosts, const int *usable, int nhosts, int i)
{
    double logsum = 0;
    int k = 0;
    for (int j = 0; j < np; j++) {
        if (strcmp(p[j].host, hosts[i]) != 0) continue;
        double top = fastest(p, np, hosts, usable, nhosts, p[j].model);
        if (top <= 0) continue;
        logsum += log2(p[j].samples_per_s / top);
        k++;
    }
    if (k == 0) return -1;
    long b = lround(-logsum / k);
    return b < 0 ? 0 : b > HCLASS_BUCKET_LAST ? HCLASS_BUCKET_LAST : (int)b;
}

int hclass_group(const hclass_profile_t *p, int np, const char *const *hosts, const int *slots, const int *usable,
                 int nhosts, int *host_class, policy_class_t *classes, char (*names)[HCLASS_NAME_MAX])
{
    /* bucket per host (HCLASS_BUCKET_LAST + 1: unmeasured), then the non-empty buckets in order */
    int cls_of_bucket[HCLASS_BUCKET_LAST + 2], slots_of[HCLASS_BUCKET_LAST + 2] = {0};
    for (int i = 0; i < nhosts; i++) {
        int b = usable[i] ? bucket_of(p, np, hosts, usable, nhosts, i) : -2;
        if (b == -1) b = HCLASS_BUCKET_LAST + 1;
        host_class[i] = b; /* the bucket for now */
        if (b >= 0) slots_of[b] += slots[i];
    }
    int nc = 0;
    for (int b = 0; b <= HCLASS_BUCKET_LAST + 1; b++) {
        cls_of_bucket[b] = -1;
        if (slots_of[b] <= 0) continue;
        cls_of_bucket[b] = nc;
        snprintf(names[nc], HCLASS_NAME_MAX, "%s", b <= HCLASS_BUCKET_LAST ? bucket_names[b] : "unmeasured");
        classes[nc] = (policy_class_t){names[nc], slots_of[b]};
        nc++;
    }
    for (int i = 0; i < nhosts; i++) host_class[i] = host_class[i] >= 0 ? cls_of_bucket[host_class[i]] : -1;
    return nc;
}

double hclass_speed(const hclass_profile_t *p, int np, const char *const *hosts, const int *host_class, int nhosts,
                    const char *model, int cls)
{
    double sum = 0;
    int k = 0;
    for (int i = 0; i < nhosts; i++) {
        if (host_class[i] != cls) continue;
        double v = hclass_profile_speed(p, np, hosts[i], model);
        if (v > 0) {
            sum += v;
            k++;
        }
    }
    return k ? sum / k : 0;
}

double hclass_job_work(const job_spec_t *spec)
{
    catalog_dataset_t d;
    if (!spec || spec->epochs <= 0 || catalog_dataset_get(spec->dataset.name, &d) != 0 || d.train_n <= 0) return 0;
    long n = spec->dataset.train_subset > 0 && spec->dataset.train_subset < d.train_n ? spec->dataset.train_subset
                                                                                      : d.train_n;
    return (double)n * spec->epochs;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The distinct models of the profiles of the listed hosts, in name order, into m (room for
 * np); returns how many. */
static int models_of(const hclass_profile_t *p, int np, const char *const *hosts, int nhosts, const char **m)
{
    int n = 0;
    for (int i = 0; i < np; i++) {
        int listed = 0, seen = 0;
        for (int h = 0; h < nhosts && !listed; h++) listed = strcmp(hosts[h], p[i].host) == 0;
        for (int k = 0; k < n && !seen; k++) seen = strcmp(m[k], p[i].model) == 0;
        if (listed && !seen) m[n++] = p[i].model;
    }
    qsort(m, (size_t)n, sizeof *m, cmp_str);
    return n;
}

/* The classes array and hosts_by_class for the grouping hc (nc classes). */
static int classes_json(const char *const *hosts, const int *slots, int nhosts, const int *hc, int nc,
                        char (*names)[HCLASS_NAME_MAX], json_t *arr, json_t *by)
{
    for (int c = 0; c < nc; c++) {
        int n = 0, total = 0, per = -1, uniform = 1;
        json_t *list = json_array();
        for (int i = 0; i < nhosts; i++) {
            if (hc[i] != c) continue;
            n++;
            total += slots[i];
            uniform &= per < 0 || per == slots[i];
            per = slots[i];
            json_array_append_new(list, json_string(hosts[i]));
        }
        if (!list || json_object_set_new(by, names[c], list) != 0 ||
            json_array_append_new(arr, json_pack("{s:s, s:i, s:i}", "name", names[c], "hosts", uniform ? n : total,
                                                 "slots", uniform ? per : 1)) != 0)
            return -1;
    }
    return 0;
}

json_t *hclass_cluster_json(const hclass_profile_t *p, int np, const char *const *hosts, const int *slots, int nhosts)
{
    int *usable = malloc(((size_t)nhosts + 1) * sizeof *usable), *hc = malloc(((size_t)nhosts + 1) * sizeof *hc);
    const char **models = malloc(((size_t)np + 1) * sizeof *models);
    policy_class_t classes[POLICY_CLASSES_MAX];
    char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
    json_t *arr = json_array(), *by = json_object(), *speeds = json_object(), *left = json_array(), *out = NULL;
    if (!usable || !hc || !models || !arr || !by || !speeds || !left) goto done;
    for (int i = 0; i < nhosts; i++) usable[i] = 1;
    int nc = hclass_group(p, np, hosts, slots, usable, nhosts, hc, classes, names);
    if (classes_json(hosts, slots, nhosts, hc, nc, names, arr, by) != 0) goto done;
    int nm = models_of(p, np, hosts, nhosts, models), ntypes = 0;
    for (int k = 0; k < nm; k++) {
        const char *why = strlen(models[k]) >= HCLASS_SIM_NAME_MAX ? "a name longer than 31 bytes"
                          : ntypes >= HCLASS_SIM_TYPES_MAX         ? "more than 64 models"
                                                                   : NULL;
        if (why) {
            if (json_array_append_new(left, json_pack("{s:s, s:s}", "model", models[k], "why", why)) != 0) goto done;
            continue;
        }
        json_t *row = json_object();
        int bad = !row;
        for (int c = 0; !bad && c < nc; c++) {
            double v = hclass_speed(p, np, hosts, hc, nhosts, models[k], c);
            bad = v > 0 && json_object_set_new(row, names[c], json_real(v)) != 0;
        }
        if (bad) json_decref(row);
        /* json_object_set_new takes row, on failure too */
        if (bad || json_object_set_new(speeds, models[k], row) != 0) goto done;
        ntypes++;
    }
    out = json_pack("{s:{s:O, s:O}, s:O, s:O}", "cluster", "classes", arr, "speeds", speeds, "hosts_by_class", by,
                    "left_out", left);
done:
    json_decref(arr);
    json_decref(by);
    json_decref(speeds);
    json_decref(left);
    free(usable);
    free(hc);
    free(models);
    return out;
}

hclass_change_t hclass_change(const int *cur, const int *alloc, int nc, int full_world, int *cap)
{
    int was = 0, now = 0, same = 1;
    for (int c = 0; c < nc; c++) {
        was += cur[c];
        now += alloc[c];
        same &= cur[c] == alloc[c];
    }
    *cap = now < full_world ? now : 0;
    if (same) return HCLASS_KEEP;
    return now < was ? HCLASS_SHRINK : now > was ? HCLASS_GROW : HCLASS_MOVE;
}

int hclass_grown_world(const int *alloc, int nc, int full_world)
{
    int now = 0;
    for (int c = 0; c < nc; c++) now += alloc[c];
    return now > full_world ? now : 0;
}

const char *hclass_change_name(hclass_change_t k)
{
    static const char *const names[] = {"keep", "shrink", "grow", "move"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

int hclass_pick_hosts(const int *host_class, const int *own, const int *free_, int nhosts, const int *alloc, int nc,
                      int *take)
{
    int need[POLICY_CLASSES_MAX] = {0}, n = 0;
    if (nc < 1 || nc > POLICY_CLASSES_MAX) return -1;
    for (int i = 0; i < nhosts; i++) take[i] = 0;
    for (int c = 0; c < nc; c++) need[c] = alloc[c] > 0 ? alloc[c] : 0;
    /* pass 0: its own hosts; pass 1: the others with free slots */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < nhosts; i++) {
            int c = host_class[i], mine = own ? own[i] : 0;
            if (c < 0 || c >= nc || take[i] || need[c] <= 0 || (pass == 0) != (mine > 0)) continue;
            int room = mine + (free_[i] > 0 ? free_[i] : 0);
            if (room <= 0) continue;
            take[i] = room < need[c] ? room : need[c];
            need[c] -= take[i];
            n++;
        }
    for (int c = 0; c < nc; c++)
        if (need[c] > 0) return -1;
    return n;
}
