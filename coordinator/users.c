/* coordinator/users.c - the users store: KEY_USERS holds one field per user
 * (its record, common/users.h: role, salt, salted hash of its token, created, expires,
 * created_by), KEY_MODEL_OWNERS the uploader of each uploaded model; a job's owner is a
 * field of its hash. A removed user's jobs and models pass to "NAME#removed-N" (REMOVE_LUA),
 * never to a later account of the name. The audit trail goes into KEY_EVENTS with the job events. Nothing
 * here keeps a token: coord_user_add and coord_user_token_new hand the new one to the
 * caller once, and only its hash is written. */
#include "coord_internal.h"
#include "jobstore.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "clog.h"
#include "errmsg.h"
#include "quotas.h"
#include "redis_keys.h"
#include "users.h"


static redisContext *borrow(coordinator_t *c, char *err, size_t errlen)
{
    char why[256];
    redisContext *rc = jobstore_pool_get(c->pool, why, sizeof why);
    if (!rc) errmsg(err, errlen, "Redis at %s is unreachable", c->redis_url_shown);
    return rc;
}

/* A fresh token and the record fields that go with it (salt, hash). */
/* Gives r a new salt and token (written to token) and serialises it into *text (malloc'd,
 * the caller frees): COORD_OK, or COORD_EINTERNAL with err. Shared by a new user and a
 * renewed token, which differ only in how the record reaches Redis. */
static int new_secret_text(user_record_t *r, char *token, size_t toklen, char **text, char *err, size_t errlen)
{
    *text = NULL;
    if (users_salt_new(r->salt) != 0 || users_token_new(r->name, token, toklen) != 0) {
        errmsg(err, errlen, "no randomness for a token (getrandom failed)");
        return COORD_EINTERNAL;
    }
    users_token_hash(r->salt, token, strlen(token), r->hash);
    json_t *j = users_record_json(r);
    *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return *text ? COORD_OK : COORD_EINTERNAL;
}

int coord_user_add(coordinator_t *c, const char *name, user_role_t role, double expires_in_s, const char *by,
                   char *token, size_t toklen, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    if (users_name_check(name, err, errlen) != 0) return COORD_EINVAL;
    if (strcmp(name, USER_ADMIN_NAME) == 0) {
        errmsg(err, errlen, "name: \"%s\" is the daemon's own token (PACER_TOKEN, --token-file): pick another name",
               USER_ADMIN_NAME);
        return COORD_ESTATE;
    }
    user_record_t r = {.role = role, .limits = users_limits_unset()};
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.created_by, sizeof r.created_by, "%s", by ? by : "");
    r.created = clock_wall_s();
    r.expires = expires_in_s > 0 ? r.created + expires_in_s : 0;
    char *text;
    int made = new_secret_text(&r, token, toklen, &text, err, errlen);
    if (made != COORD_OK) return made;
    redisContext *rc = borrow(c, err, errlen);
    if (!rc) {
        free(text);
        return COORD_EUNAVAIL;
    }
    redisReply *rep = redisCommand(rc, "HSETNX %s %s %s", KEY_USERS, name, text);
    free(text);
    int ok = reply_ok(rep);
    long long added = reply_int(rep, -1);
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    if (!ok) return COORD_EUNAVAIL;
    if (added != 1) {
        errmsg(err, errlen, "user %s exists already: remove it first, or give it a new token (pacer token new)", name);
        return COORD_ESTATE;
    }
    *out = users_record_public(&r);
    return COORD_OK;
}

int coord_user_get(coordinator_t *c, const char *name, user_record_t *out)
{
    if (users_name_check(name, NULL, 0) != 0) return COORD_ENOTFOUND;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = redisCommand(rc, "HGET %s %s", KEY_USERS, name);
    int ok = reply_ok(rep);
    int code = !ok ? COORD_EUNAVAIL : rep->type != REDIS_REPLY_STRING ? COORD_ENOTFOUND : COORD_OK;
    if (code == COORD_OK && users_record_parse(name, rep->str, rep->len, out, NULL, 0) != 0) code = COORD_ENOTFOUND;
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    return code;
}

int coord_user_list(coordinator_t *c, json_t **out)
{
    *out = NULL;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = redisCommand(rc, "HGETALL %s", KEY_USERS);
    int ok = reply_ok(rep) && rep->type == REDIS_REPLY_ARRAY;
    jobstore_pool_put(c->pool, rc, !ok);
    if (!ok) {
        freeReplyObject(rep);
        return COORD_EUNAVAIL;
    }
    json_t *users = json_array();
    for (size_t i = 0; users && i + 1 < rep->elements; i += 2) {
        user_record_t r;
        const redisReply *k = rep->element[i], *v = rep->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
            users_record_parse(k->str, v->str, v->len, &r, NULL, 0) != 0)
            continue; /* a damaged record authenticates nobody; not shown */
        json_t *pub = users_record_public(&r);
        user_limits_t eff;
        users_limits_effective(&r, r.role, &c->cfg.member, &eff);
        if (pub) json_object_set_new(pub, "limits", users_limits_json(&eff));
        json_array_append_new(users, pub);
    }
    freeReplyObject(rep);
    *out = users ? json_pack("{s:o}", "users", users) : NULL;
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* KEYS: users, removals, model owners, jobs, fair share, the user's KEY_USER_QUEUED.
 * ARGV: the name, the job key's prefix. Removes the record and hands what it owned to
 * "NAME#removed-N" (users_removed_owner): its uploads and every job whose hash names it,
 * in one step, so no request sees the name own anything without the account; nil when
 * there was no such user. A scan of the jobs kept (--keep-jobs), once per removal. */
static const char REMOVE_LUA[] =
    "if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return false end\n"
    "local tomb = ARGV[1] .. '#removed-' .. redis.call('INCR', KEYS[2])\n"
    "local owners = redis.call('HGETALL', KEYS[3])\n"
    "for i = 1, #owners, 2 do\n"
    "  if owners[i + 1] == ARGV[1] then redis.call('HSET', KEYS[3], owners[i], tomb) end\n"
    "end\n"
    "for _, id in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do\n"
    "  local k = ARGV[2] .. id\n"
    "  if redis.call('HGET', k, 'owner') == ARGV[1] then redis.call('HSET', k, 'owner', tomb) end\n"
    "end\n"
    "redis.call('HDEL', KEYS[5], ARGV[1])\n"
    "redis.call('DEL', KEYS[6])\n"
    "return tomb";

int coord_user_remove(coordinator_t *c, const char *name, char *err, size_t errlen)
{
    if (strcmp(name, USER_ADMIN_NAME) == 0) {
        errmsg(err, errlen, "\"%s\" is the daemon's own token: change PACER_TOKEN or --token-file and restart",
               USER_ADMIN_NAME);
        return COORD_ESTATE;
    }
    if (users_name_check(name, NULL, 0) != 0) {
        errmsg(err, errlen, "no user %.64s", name);
        return COORD_ENOTFOUND;
    }
    redisContext *rc = borrow(c, err, errlen);
    if (!rc) return COORD_EUNAVAIL;
    char queued[128], prefix[64];
    snprintf(queued, sizeof queued, KEY_USER_QUEUED, name);
    snprintf(prefix, sizeof prefix, KEY_JOB, "");
    redisReply *rep = redisCommand(rc, "EVAL %s 6 %s %s %s %s %s %s %s %s", REMOVE_LUA, KEY_USERS, KEY_USER_REMOVALS,
                                   KEY_MODEL_OWNERS, KEY_JOBS, KEY_FAIRSHARE, queued, name, prefix);
    int ok = reply_ok(rep);
    int found = ok && rep->type == REDIS_REPLY_STRING;
    if (found) clog_printf("users: %s removed; what they owned is %s's now", name, rep->str);
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    if (!ok) return COORD_EUNAVAIL;
    if (!found) {
        errmsg(err, errlen, "no user %s", name);
        return COORD_ENOTFOUND;
    }
    atomic_fetch_add(&c->users->owners_gen, 1); /* the tick's runs and queued jobs: read their owners again */
    if (c->users->removed) c->users->removed(c, name);
    return COORD_OK;
}

/* KEYS: users, the hash holding the owner. ARGV: the user, the field. */
static const char CONFIRM_LUA[] =
    "if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then\n"
    "  redis.call('HSET', KEYS[2], ARGV[2], ARGV[1] .. '#removed') end\n"
    "return 0";

void coord_owner_confirm(redisContext *rc, const char *key, const char *field, const char *user)
{
    if (!user || strcmp(user, USER_ADMIN_NAME) == 0) return;
    redisReply *rep = redisCommand(rc, "EVAL %s 2 %s %s %s %s", CONFIRM_LUA, KEY_USERS, key, user, field);
    freeReplyObject(rep);
}

/* Replaces the record only while the user still exists: a removal in between wins. */
#define REPLACE_LUA                                                                                                    \
    "if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then redis.call('HSET', KEYS[1], ARGV[1], ARGV[2]) return 1 end " \
    "return 0"

/* Writes r's record over the stored one while the user still exists. COORD_OK,
 * COORD_ENOTFOUND (removed meanwhile) or COORD_EUNAVAIL, with err. Takes text (freed). */
static int replace_record(coordinator_t *c, const char *name, char *text, char *err, size_t errlen)
{
    redisContext *rc = borrow(c, err, errlen);
    if (!rc) {
        free(text);
        return COORD_EUNAVAIL;
    }
    redisReply *rep = redisCommand(rc, "EVAL %s 1 %s %s %s", REPLACE_LUA, KEY_USERS, name, text);
    free(text);
    int ok = reply_ok(rep);
    long long n = reply_int(rep, 0);
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    if (!ok) return COORD_EUNAVAIL;
    if (n != 1) {
        errmsg(err, errlen, "no user %s", name);
        return COORD_ENOTFOUND;
    }
    return COORD_OK;
}

int coord_user_token_new(coordinator_t *c, const char *name, char *token, size_t toklen, char *err, size_t errlen)
{
    user_record_t r;
    int code = coord_user_get(c, name, &r);
    if (code == COORD_ENOTFOUND) errmsg(err, errlen, "no user %s", name);
    if (code != COORD_OK) return code;
    char *text;
    int made = new_secret_text(&r, token, toklen, &text, err, errlen);
    if (made != COORD_OK) return made;
    return replace_record(c, name, text, err, errlen);
}

int coord_user_update(coordinator_t *c, const char *name, const user_update_t *u, json_t **out, char *err, size_t errlen)
{
    *out = NULL;
    user_record_t r;
    int code = strcmp(name, USER_ADMIN_NAME) == 0 ? COORD_ESTATE : coord_user_get(c, name, &r);
    if (code == COORD_ESTATE)
        errmsg(err, errlen, "\"%s\" is the daemon's own token and has no record: its weight is 1, and no limit binds it",
               USER_ADMIN_NAME);
    if (code == COORD_ENOTFOUND) errmsg(err, errlen, "no user %.64s", name);
    if (code != COORD_OK) return code;
    if (u->weight > 0) r.weight = u->weight;
    users_update_apply(u, &r.limits);
    json_t *j = users_record_json(&r);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) return COORD_EINTERNAL;
    code = replace_record(c, name, text, err, errlen);
    if (code != COORD_OK) return code;
    *out = users_record_public(&r);
    user_limits_t eff;
    users_limits_effective(&r, r.role, &c->cfg.member, &eff);
    if (*out) json_object_set_new(*out, "limits", users_limits_json(&eff));
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* A stored owner into owner: one that does not fit is "#unknown", which no user is (a
 * truncated "NAME#removed-N" must never read as NAME). */
static void owner_copy(char *owner, size_t len, const char *stored)
{
    if (strlen(stored) < len) snprintf(owner, len, "%s", stored);
    else snprintf(owner, len, "#unknown");
}

/* HSET or HDEL of one field; COORD_OK or COORD_EUNAVAIL. */
static int hash_field(coordinator_t *c, const char *key, const char *field, const char *value)
{
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = value ? redisCommand(rc, "HSET %s %s %s", key, field, value)
                            : redisCommand(rc, "HDEL %s %s", key, field);
    int ok = reply_ok(rep);
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}

int coord_model_owner_set(coordinator_t *c, const char *name, const char *owner)
{
    return hash_field(c, KEY_MODEL_OWNERS, name, owner && *owner ? owner : NULL);
}

int coord_model_owner(coordinator_t *c, const char *name, char *owner, size_t len)
{
    owner[0] = 0;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = redisCommand(rc, "HGET %s %s", KEY_MODEL_OWNERS, name);
    int ok = reply_ok(rep);
    if (ok && rep->type == REDIS_REPLY_STRING) owner_copy(owner, len, rep->str);
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}

int coord_audit(coordinator_t *c, const char *user, const char *role, const char *method, const char *path,
                const char *target, int status)
{
    json_t *ev = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:f}", "type", "audit", "user", user ? user : "", "role",
                           role ? role : "", "method", method ? method : "", "path", path ? path : "", "status", status,
                           "time", clock_wall_s());
    if (!ev) return COORD_EINTERNAL;
    if (target && *target) json_object_set_new(ev, "target", json_string(target));
    redisContext *rc = borrow(c, NULL, 0);
    int js = rc ? jobstore_event(rc, ev) : JS_EREDIS;
    if (rc) jobstore_pool_put(c->pool, rc, js == JS_EREDIS);
    json_decref(ev);
    return coord_js_to_coord(js);
}

int coord_model_owners(coordinator_t *c, json_t **out)
{
    *out = NULL;
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = redisCommand(rc, "HGETALL %s", KEY_MODEL_OWNERS);
    int ok = reply_ok(rep) && rep->type == REDIS_REPLY_ARRAY;
    jobstore_pool_put(c->pool, rc, !ok);
    json_t *o = ok ? json_object() : NULL;
    for (size_t i = 0; o && i + 1 < rep->elements; i += 2)
        if (rep->element[i]->type == REDIS_REPLY_STRING && rep->element[i + 1]->type == REDIS_REPLY_STRING)
            json_object_set_new(o, rep->element[i]->str, json_string(rep->element[i + 1]->str));
    freeReplyObject(rep);
    *out = o;
    return ok ? (o ? COORD_OK : COORD_EINTERNAL) : COORD_EUNAVAIL;
}

int coord_job_owner(coordinator_t *c, const char *id, char *owner, size_t len, int *exists)
{
    owner[0] = 0;
    *exists = 0;
    if (!job_id_valid(id)) return COORD_OK;
    char key[128];
    snprintf(key, sizeof key, KEY_JOB, id);
    redisContext *rc = borrow(c, NULL, 0);
    if (!rc) return COORD_EUNAVAIL;
    redisReply *rep = redisCommand(rc, "HMGET %s id owner", key);
    int ok = reply_ok(rep) && rep->type == REDIS_REPLY_ARRAY && rep->elements == 2;
    if (ok) {
        *exists = rep->element[0]->type == REDIS_REPLY_STRING;
        if (rep->element[1]->type == REDIS_REPLY_STRING) owner_copy(owner, len, rep->element[1]->str);
    }
    freeReplyObject(rep);
    jobstore_pool_put(c->pool, rc, !ok);
    return ok ? COORD_OK : COORD_EUNAVAIL;
}
