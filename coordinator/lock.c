/* coordinator/lock.c - see lock.h. */
#include "lock.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "coord_internal.h"
#include "jobstore.h"
#include "launch.h"
#include "tickconn.h"

#define LOCK_TTL_MS 15000

void coord_lock_init(coordinator_t *c)
{
    unsigned long long me = 0;
    proc_stat(getpid(), &me, NULL);
    /* host, pid and start time identify the holder (a dead one on this host can be taken
     * over at once); the nonce tells two coordinators of one process apart. */
    snprintf(c->dlock->value, sizeof c->dlock->value, "%s %d %llu %lx", c->hostname, (int)getpid(), me,
             (unsigned long)(clock_mono_s() * 1e9) ^ (unsigned long)(uintptr_t)c);
}

/* KEYS: lock. ARGV: mine, ttl ms, takeover-from ("" = none).
 * Takes or refreshes the lock when it is free, ours, or held by takeover-from. */
static const char LOCK_LUA[] = "local v = redis.call('GET', KEYS[1])\n"
                               "if v == false or v == ARGV[1] or (ARGV[3] ~= '' and v == ARGV[3]) then\n"
                               "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
                               "  return {1, ARGV[1]}\n"
                               "end\n"
                               "return {0, v}\n";

static const char UNLOCK_LUA[] = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end\n"
                                 "return 0\n";

int coord_lock_try(coordinator_t *c, redisContext *rc, char *who, size_t wholen)
{
    char ttl[16];
    snprintf(ttl, sizeof ttl, "%d", LOCK_TTL_MS);
    const char *takeover = "";
    char holder[320] = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        redisReply *r = redisCommand(rc, "EVAL %s 1 %s %s %s %s", LOCK_LUA, KEY_LOCK, c->dlock->value, ttl, takeover);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (r) freeReplyObject(r);
            return JS_EREDIS;
        }
        int got = reply_int(r->element[0], 0) == 1;
        snprintf(holder, sizeof holder, "%s", reply_str(r->element[1]) ? reply_str(r->element[1]) : "");
        freeReplyObject(r);
        if (got) return 1;
        /* Held: by a coordinator of this host that is gone (killed -9)? Then take over. */
        char host[256];
        int pid = 0;
        unsigned long long start = 0;
        if (sscanf(holder, "%255s %d %llu", host, &pid, &start) == 3 && strcmp(host, c->hostname) == 0 &&
            !proc_alive(pid, start) && attempt == 0) {
            takeover = holder;
            continue;
        }
        break;
    }
    snprintf(who, wholen, "%s", holder);
    return 0;
}

void coord_lock_release(coordinator_t *c)
{
    if (!c->conn->rc || !c->dlock->held) return;
    redisReply *r = redisCommand(c->conn->rc, "EVAL %s 1 %s %s", UNLOCK_LUA, KEY_LOCK, c->dlock->value);
    if (r) freeReplyObject(r);
}
