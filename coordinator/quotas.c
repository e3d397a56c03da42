/* coordinator/quotas.c - see quotas.h; coord_limits_of (coordinator.h) is the API's side. */
#include "quotas.h"

#include <stdio.h>
#include <string.h>

#include "coord_internal.h"
#include "errmsg.h"
#include "jobstore.h"
#include "policy.h"
#include "redis_keys.h"

/* The spec's priorities and the users' limits number them alike (common/ cannot see
 * policy.h). */
_Static_assert(POLICY_PRIO_LOW == USER_PRIO_LOW && POLICY_PRIO_NORMAL == USER_PRIO_NORMAL &&
                   POLICY_PRIO_HIGH == USER_PRIO_HIGH,
               "spec priorities and users' limits differ");

int coord_limits_of(coordinator_t *c, const coord_caller_t *by, user_limits_t *out)
{
    *out = (user_limits_t){0, 0, 0, USER_PRIO_HIGH};
    if (!by || !by->user) return COORD_OK;
    user_record_t r;
    int code = strcmp(by->user, USER_ADMIN_NAME) == 0 ? COORD_ENOTFOUND : coord_user_get(c, by->user, &r);
    if (code == COORD_EUNAVAIL) return code;
    users_limits_effective(code == COORD_OK ? &r : NULL, by->role, &c->cfg.member, out);
    return COORD_OK;
}

/* KEYS: the user's KEY_USER_QUEUED set, the queue. ARGV: the job key's prefix, the user.
 * Returns {the queue's length, the user's jobs in it}; drops from the set the jobs that
 * ended, are gone or are someone else's now (a removed user's), keeping the running ones,
 * which a preemption may queue again. */
static const char COUNT_LUA[] = "local n = 0\n"
                                "for _, id in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
                                "  local f = redis.call('HMGET', ARGV[1] .. id, 'state', 'owner')\n"
                                "  if f[2] ~= ARGV[2] then redis.call('SREM', KEYS[1], id)\n"
                                "  elseif f[1] == 'QUEUED' then n = n + 1\n"
                                "  elseif f[1] ~= 'RUNNING' and f[1] ~= 'RESTARTING' then\n"
                                "    redis.call('SREM', KEYS[1], id) end\n"
                                "end\n"
                                "return {redis.call('LLEN', KEYS[2]), n}";

/* The queue's length and user's queued jobs (user NULL: 0): COORD_OK or COORD_EUNAVAIL. */
static int queue_counts(redisContext *rc, const char *user, long long *total, long long *mine)
{
    char set[128], prefix[64];
    snprintf(set, sizeof set, KEY_USER_QUEUED, user ? user : "");
    snprintf(prefix, sizeof prefix, KEY_JOB, "");
    redisReply *r = user ? redisCommand(rc, "EVAL %s 2 %s %s %s %s", COUNT_LUA, set, KEY_QUEUE, prefix, user)
                         : redisCommand(rc, "LLEN %s", KEY_QUEUE);
    int ok = r && (user ? r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                              r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER
                        : r->type == REDIS_REPLY_INTEGER);
    if (ok) {
        *total = user ? r->element[0]->integer : r->integer;
        *mine = user ? r->element[1]->integer : 0;
    }
    if (r) freeReplyObject(r);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}

/* Whether by's spec priority is within their max_priority: COORD_OK, or COORD_EDENIED with err. */
static int priority_allowed(const char *user, const user_limits_t *lim, int priority, char *err, size_t errlen)
{
    if (!user || priority <= lim->max_priority) return COORD_OK;
    errmsg(err, errlen,
           "priority: %s is above what %s may use (max_priority %s); an admin may raise it (PUT /api/v1/users/%s)",
           users_priority_name(priority), user, users_priority_name(lim->max_priority), user);
    return COORD_EDENIED;
}

/* Whether user (NULL: nobody) may queue one more job: COORD_OK, or a refusal with err.
 * Under admit_lock: the counts must not change until the job is stored. */
static int queue_has_room(coordinator_t *c, redisContext *rc, const char *user, const user_limits_t *lim, char *err,
                          size_t errlen)
{
    long long total = 0, mine = 0;
    if (queue_counts(rc, lim->max_queued > 0 ? user : NULL, &total, &mine) != COORD_OK)
        return errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown), COORD_EUNAVAIL;
    if (c->cfg.max_queued > 0 && total >= c->cfg.max_queued)
        return errmsg(err, errlen,
                      "the queue holds %lld jobs, this coordinator's limit (--max-queued %ld): submit again once "
                      "some have started",
                      total, c->cfg.max_queued),
               COORD_ELIMIT;
    if (user && lim->max_queued > 0 && mine >= lim->max_queued)
        return errmsg(err, errlen,
                      "max_queued: %s may have at most %ld job%s queued and has %lld: submit again once one has "
                      "started, or cancel one",
                      user, lim->max_queued, lim->max_queued == 1 ? "" : "s", mine),
               COORD_ELIMIT;
    return COORD_OK;
}

int quotas_submit(coordinator_t *c, redisContext *rc, job_new_t *j, const coord_caller_t *by, int priority, int ranks,
                  char *id, size_t idlen, json_t **hash, char *err, size_t errlen)
{
    const char *user = by && by->user ? by->user : NULL;
    j->owner = user;
    if (!c->daemon) return coord_js_to_coord(jobstore_submit(rc, j, id, idlen, hash));
    user_limits_t lim;
    if (coord_limits_of(c, by, &lim) != COORD_OK)
        return errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown), COORD_EUNAVAIL;
    int code = priority_allowed(user, &lim, priority, err, errlen);
    if (code != COORD_OK) return code;
    if (user && lim.max_slots > 0 && ranks > lim.max_slots)
        return errmsg(err, errlen,
                      "max_slots: %s's running jobs may hold at most %ld slot%s at once, and this job asks for %d "
                      "ranks: it could never start",
                      user, lim.max_slots, lim.max_slots == 1 ? "" : "s", ranks),
               COORD_ELIMIT;
    j->counted = user && lim.max_queued > 0;
    pthread_mutex_lock(&c->users->admit_lock);
    code = queue_has_room(c, rc, user, &lim, err, errlen);
    if (code == COORD_OK) code = coord_js_to_coord(jobstore_submit(rc, j, id, idlen, hash));
    pthread_mutex_unlock(&c->users->admit_lock);
    if (code == COORD_OK && user) {
        char key[128];
        snprintf(key, sizeof key, KEY_JOB, id);
        coord_owner_confirm(rc, key, "owner", user); /* removed meanwhile: not the next account's */
    }
    return code;
}

int quotas_models_owned(redisContext *rc, const char *user, long *n)
{
    *n = 0;
    redisReply *r = redisCommand(rc, "HVALS %s", KEY_MODEL_OWNERS);
    int ok = r && r->type == REDIS_REPLY_ARRAY;
    for (size_t i = 0; ok && i < r->elements; i++)
        if (r->element[i]->type == REDIS_REPLY_STRING && strcmp(r->element[i]->str, user) == 0) ++*n;
    if (r) freeReplyObject(r);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}
