/* coordinator/hclass.h - the host classes of the daemon's class-aware policies (--policy
 * hetero|agnostic, policy.h "Host classes"): the launcher's hosts grouped by their measured
 * speed, and each job type's speed per class. A job's type is its spec's model (a built-in
 * name, or an uploaded ONNX model's name): the key of the per-(host, device, model)
 * profiles in Redis (pacer:profile:*, docs/REDIS.md) that finished jobs (dynbatch.c) and
 * pre-flight benchmarks (preflight.c) write.
 *
 * The tick thread owns the cache (c->sched->hcache); it reads the profiles at most
 * every HCLASS_REFRESH_S (two round trips: the set, then every profile in one pipeline),
 * never per host per tick. The grouping is pure and unit-tested (test_hclass).
 */
#ifndef PACER_HCLASS_H
#define PACER_HCLASS_H

#include <hiredis/hiredis.h>
#include <jansson.h>

#include "policy.h"
#include "spec.h"

#define HCLASS_REFRESH_S 10.0    /* profiles change when a job ends or a benchmark runs */
#define HCLASS_PROFILES_MAX 4096 /* profiles read (the first of pacer:profiles' members) */
#define HCLASS_NAME_MAX 16

/* One stored profile: samples/s of one rank of model on host (the fastest device's). */
typedef struct {
    char host[256];
    char model[SPEC_NAME_MAX];
    double samples_per_s;
} hclass_profile_t;

typedef struct {
    hclass_profile_t *p; /* owned */
    int n;
    double read_at; /* when last read (0: never) */
} hclass_cache_t;

/* Reads the profiles again when the last read is HCLASS_REFRESH_S old (or never was).
 * Returns 0 (the cache kept on a malformed profile, which is skipped), or -1 when Redis
 * did not answer (the cache is kept, read again next time). */
int hclass_refresh(redisContext *rc, hclass_cache_t *cache, double now);
void hclass_free(hclass_cache_t *cache);

/* One profile from the reply to HMGET key host model samples_per_s [device]: 1 when its host and
 * model are non-empty strings that fit (each cut at a NUL inside it) and its speed a finite
 * number > 0, else 0 (a profile that is skipped). */
int hclass_parse_profile(const redisReply *r, hclass_profile_t *out);

/* Groups the usable hosts (usable[i] != 0) into classes by measured speed, deterministic
 * for the same profiles: a host's relative speed is the geometric mean, over the models
 * profiled on it, of its speed over the fastest host's for that model; its class is that
 * ratio's power-of-two bucket, round(log2(1 / ratio)) ("x1": above 1/sqrt2 of the fastest,
 * "x1/2", "x1/4", ... the slowest buckets merged into the sixth), fastest class first; the
 * hosts with no profile form one more class, "unmeasured" (policy_speed estimates it).
 * Writes each host's class (-1: not usable) into host_class, the classes (name, usable
 * slots) into classes with their names in names. Returns the number of classes (0 when
 * no host is usable). */
int hclass_group(const hclass_profile_t *p, int np, const char *const *hosts, const int *slots, const int *usable,
                 int nhosts, int *host_class, policy_class_t *classes, char (*names)[HCLASS_NAME_MAX]);

/* model's samples/s per slot on class cls: the mean of its profiles on that class's hosts;
 * 0 when none has one (unknown: policy_speed estimates it). */
double hclass_speed(const hclass_profile_t *p, int np, const char *const *hosts, const int *host_class, int nhosts,
                    const char *model, int cls);

/* A job's work in the speeds' unit, samples: its spec's epochs over its training set (the
 * catalog's count, or train_subset when fewer); 0 when unknown (a user's data set, whose
 * count only decoding tells). For policy_hjob_t.work (run.c: a queued job's whole, a running
 * one's share left by its progress). */
double hclass_job_work(const job_spec_t *spec);

/* ---- The simulator's cluster file from the profiles (GET /api/v1/cluster/classes) ----
 * What pacer-sched-sim --cluster reads (docs/ARCHITECTURE.md "Scheduler simulator"),
 * built by the same grouping the policy uses: {"cluster": {"classes": [{"name", "hosts",
 * "slots"}], "speeds": {model: {class: samples/s per slot}}}, "hosts_by_class": {class:
 * [host]}, "left_out": [{"model", "why"}]}. Every host counts (the file describes the
 * cluster, not its health today). A class whose hosts differ in slots is written as that
 * many 1-slot hosts; a class where a model has no profile is omitted from its speeds (the
 * simulator estimates it, policy_speed). Models are in name order; one the simulator
 * cannot take (a name over HCLASS_SIM_NAME_MAX - 1 bytes, beyond HCLASS_SIM_TYPES_MAX) is
 * in left_out with why, never dropped silently. NULL when out of memory. */
#define HCLASS_SIM_NAME_MAX 32  /* sim/sched_input.h SCHED_NAME_MAX */
#define HCLASS_SIM_TYPES_MAX 64 /* sim/sched_input.h SCHED_TYPES_MAX */
json_t *hclass_cluster_json(const hclass_profile_t *p, int np, const char *const *hosts, const int *slots, int nhosts);

/* ---- Applying the plan's changes of a running job (policy_resize_t; run.c) ----------
 * Pure, for the unit test: what kind of change a new allocation is, and which hosts it
 * runs on. */
typedef enum {
    HCLASS_KEEP = 0, /* the same slots per class: nothing to do */
    HCLASS_SHRINK,   /* fewer slots (to admit another job) */
    HCLASS_GROW,     /* more slots (hosts freed up) */
    HCLASS_MOVE,     /* as many slots, on other classes */
} hclass_change_t;

/* The change from cur to alloc (slots per class, nc classes) of a job whose spec asks for
 * full_world ranks, and the world cap its relaunch runs under into *cap (run.h world_cap:
 * the new slots when fewer than full_world, else 0, no cap). */
hclass_change_t hclass_change(const int *cur, const int *alloc, int nc, int full_world, int *cap);
const char *hclass_change_name(hclass_change_t k); /* "keep", "shrink", "grow", "move" */
/* The world a job whose spec asks for full_world ranks runs at on alloc (run.h world_grow):
 * the slots when more than full_world (a grow past its ask onto idle slots), else 0 (the
 * world cap of hclass_change, or none, applies). */
int hclass_grown_world(const int *alloc, int nc, int full_world);

/* The hosts of a new allocation alloc[0..nc): in each class, the hosts the job holds there
 * first (own[i]: its slots on host i; own NULL: none, a job not started yet), then hosts
 * with free slots (free_[i], its own not counted), in the launcher's order, a host's slots
 * (own + free) at a time until the class's slots are taken, so that a shrink keeps a
 * subset of its hosts and a grow adds to them. host_class[i]: the class of host i (-1: not
 * usable, never chosen). Writes the slots taken on each host into take[0..nhosts) (0: not
 * chosen). Returns the number of hosts chosen, or -1 when a class has too few slots (then
 * nothing is to be applied). */
int hclass_pick_hosts(const int *host_class, const int *own, const int *free_, int nhosts, const int *alloc, int nc,
                      int *take);

#endif
