/* common/users.c - see users.h. */
#include "users.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "errmsg.h"
#include "jsonbody.h"

static const char *const ROLE_NAMES[] = {"viewer", "member", "admin"};

const char *users_role_name(user_role_t r) { return (unsigned)r < 3 ? ROLE_NAMES[r] : "?"; }

int users_role_parse(const char *s, user_role_t *out)
{
    for (int i = 0; s && i < 3; i++)
        if (strcmp(s, ROLE_NAMES[i]) == 0) {
            *out = (user_role_t)i;
            return 0;
        }
    return -1;
}

int users_name_check(const char *name, char *err, size_t errlen)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0) return errmsg(err, errlen, "name: empty");
    if (n > USER_NAME_MAX) return errmsg(err, errlen, "name: longer than %d characters", USER_NAME_MAX);
    if (name[0] < 'a' || name[0] > 'z') return errmsg(err, errlen, "name: must start with a letter a-z");
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return errmsg(err, errlen, "name: only a-z, 0-9, '_' and '-' are allowed");
    }
    return 0;
}

/* A request body that must be one JSON object (shape names its members for the message):
 * the object (the caller decrefs), or NULL with err. */
static json_t *body_object(const char *body, size_t len, const char *shape, char *err, size_t errlen)
{
    if (!body || len == 0) return errmsg(err, errlen, "the request body is empty"), NULL;
    if (memchr(body, 0, len)) return errmsg(err, errlen, "the request body contains a NUL byte"), NULL;
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc) return errmsg(err, errlen, "line %d column %d: %s", je.line, je.column, jsonbody_text(&je)), NULL;
    if (!json_is_object(doc)) {
        errmsg(err, errlen, "the body must be a JSON object %s", shape);
        json_decref(doc);
        return NULL;
    }
    return doc;
}

int users_body_parse(const char *body, size_t len, char *name, size_t namelen, user_role_t *role, double *expires_in_s,
                     char *err, size_t errlen)
{
    *expires_in_s = 0;
    json_t *doc = body_object(body, len, "{\"name\", \"role\", \"expires_in_s\"}", err, errlen);
    if (!doc) return -1;
    int rc = -1;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "role") != 0 && strcmp(key, "expires_in_s") != 0) {
            errmsg(err, errlen, "%.64s: unknown field (name, role and expires_in_s are)", key);
            goto out;
        }
    }
    const char *n = json_string_value(json_object_get(doc, "name"));
    if (!n) {
        errmsg(err, errlen, "name: required, a string");
        goto out;
    }
    if (users_name_check(n, err, errlen) != 0) goto out;
    if (strlen(n) >= namelen) {
        errmsg(err, errlen, "name: too long");
        goto out;
    }
    const char *r = json_string_value(json_object_get(doc, "role"));
    if (!r || users_role_parse(r, role) != 0) {
        errmsg(err, errlen, "role: required, one of admin, member, viewer");
        goto out;
    }
    json_t *e = json_object_get(doc, "expires_in_s");
    if (e) {
        double s = json_number_value(e);
        if (!json_is_number(e) || !isfinite(s) || s <= 0 || s > USER_EXPIRES_MAX_S) {
            errmsg(err, errlen, "expires_in_s: must be a number of seconds > 0 and at most %.0f (ten years)",
                   USER_EXPIRES_MAX_S);
            goto out;
        }
        *expires_in_s = s;
    }
    strcpy(name, n);
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

/* A limit's value in a body or record: an integer in [0, USER_LIMIT_MAX], or null
 * (USER_LIMIT_UNSET). 0, or -1. */
static int limit_value(const json_t *v, long *out)
{
    if (json_is_null(v)) return *out = USER_LIMIT_UNSET, 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > USER_LIMIT_MAX) return -1;
    *out = (long)json_integer_value(v);
    return 0;
}

/* A priority limit: "low", "normal", "high", or null (USER_PRIO_UNSET). 0, or -1. */
static int priority_value(const json_t *v, int *out)
{
    if (json_is_null(v)) return *out = USER_PRIO_UNSET, 0;
    return users_priority_parse(json_string_value(v), out);
}

static const struct {
    const char *key;
    unsigned bit;
    size_t off; /* of the long in user_limits_t */
} LIMIT_FIELDS[] = {
    {"max_queued", USER_SET_QUEUED, offsetof(user_limits_t, max_queued)},
    {"max_slots", USER_SET_SLOTS, offsetof(user_limits_t, max_slots)},
    {"max_models", USER_SET_MODELS, offsetof(user_limits_t, max_models)},
};
#define NLIMIT_FIELDS (sizeof LIMIT_FIELDS / sizeof LIMIT_FIELDS[0])

static long *limit_at(user_limits_t *l, size_t i) { return (long *)((char *)l + LIMIT_FIELDS[i].off); }

const char *users_priority_name(int prio)
{
    return prio == USER_PRIO_HIGH ? "high" : prio == USER_PRIO_LOW ? "low" : "normal";
}

int users_priority_parse(const char *s, int *out)
{
    if (!s) return -1;
    if (strcmp(s, "low") == 0) *out = USER_PRIO_LOW;
    else if (strcmp(s, "normal") == 0) *out = USER_PRIO_NORMAL;
    else if (strcmp(s, "high") == 0) *out = USER_PRIO_HIGH;
    else return -1;
    return 0;
}

user_limits_t users_limits_unset(void)
{
    return (user_limits_t){USER_LIMIT_UNSET, USER_LIMIT_UNSET, USER_LIMIT_UNSET, USER_PRIO_UNSET};
}

int users_update_parse(const char *body, size_t len, user_update_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->set = users_limits_unset();
    json_t *doc = body_object(body, len, "{\"weight\", \"max_queued\", \"max_slots\", \"max_models\", \"max_priority\"}",
                              err, errlen);
    if (!doc) return -1;
    int rc = -1;
    const char *key;
    json_t *v;
    json_object_foreach(doc, key, v)
    {
        int known = strcmp(key, "weight") == 0 || strcmp(key, "max_priority") == 0;
        for (size_t i = 0; i < NLIMIT_FIELDS; i++) known |= strcmp(key, LIMIT_FIELDS[i].key) == 0;
        if (!known) {
            errmsg(err, errlen,
                   "%.64s: unknown field (a user's update takes weight, max_queued, max_slots, max_models and "
                   "max_priority)",
                   key);
            goto out;
        }
    }
    if (json_object_size(doc) == 0) {
        errmsg(err, errlen,
               "the body names nothing to change: weight, max_queued, max_slots, max_models or max_priority");
        goto out;
    }
    json_t *w = json_object_get(doc, "weight");
    double x = json_number_value(w);
    if (w && (!json_is_number(w) || !isfinite(x) || x <= 0 || x > USER_WEIGHT_MAX)) {
        errmsg(err, errlen, "weight: must be a number > 0 and at most %.0f", USER_WEIGHT_MAX);
        goto out;
    }
    out->weight = w ? x : 0;
    for (size_t i = 0; i < NLIMIT_FIELDS; i++) {
        json_t *l = json_object_get(doc, LIMIT_FIELDS[i].key);
        if (!l) continue;
        if (limit_value(l, limit_at(&out->set, i)) != 0) {
            errmsg(err, errlen, "%s: an integer from 0 (no limit) to %ld, or null (the role's default)",
                   LIMIT_FIELDS[i].key, USER_LIMIT_MAX);
            goto out;
        }
        out->present |= LIMIT_FIELDS[i].bit;
    }
    json_t *p = json_object_get(doc, "max_priority");
    if (p && priority_value(p, &out->set.max_priority) != 0) {
        errmsg(err, errlen, "max_priority: one of low, normal, high, or null (the role's default)");
        goto out;
    }
    if (p) out->present |= USER_SET_PRIORITY;
    rc = 0;
out:
    json_decref(doc);
    return rc;
}

void users_update_apply(const user_update_t *u, user_limits_t *lim)
{
    for (size_t i = 0; i < NLIMIT_FIELDS; i++)
        if (u->present & LIMIT_FIELDS[i].bit) *limit_at(lim, i) = *limit_at((user_limits_t *)&u->set, i);
    if (u->present & USER_SET_PRIORITY) lim->max_priority = u->set.max_priority;
}

void users_limits_effective(const user_record_t *r, user_role_t role, const user_limits_t *member_defaults,
                            user_limits_t *out)
{
    if (role == USER_ADMIN) *out = (user_limits_t){0, 0, 0, USER_PRIO_HIGH};
    else *out = *member_defaults;
    if (!r) return;
    for (size_t i = 0; i < NLIMIT_FIELDS; i++)
        if (*limit_at((user_limits_t *)&r->limits, i) >= 0)
            *limit_at(out, i) = *limit_at((user_limits_t *)&r->limits, i);
    if (r->limits.max_priority != USER_PRIO_UNSET) out->max_priority = r->limits.max_priority;
}

json_t *users_limits_json(const user_limits_t *l)
{
    json_t *o = json_object();
    for (size_t i = 0; o && i < NLIMIT_FIELDS; i++) {
        long v = *limit_at((user_limits_t *)l, i);
        json_object_set_new(o, LIMIT_FIELDS[i].key, v > 0 ? json_integer(v) : json_null());
    }
    if (o) json_object_set_new(o, "max_priority", json_string(users_priority_name(l->max_priority)));
    return o;
}

int users_removed_owner(const char *name, long long n, char *out, size_t len)
{
    int k = snprintf(out, len, "%s#removed-%lld", name, n);
    return k > 0 && (size_t)k < len ? 0 : -1;
}

static int random_hex(char *out, size_t nbytes)
{
    unsigned char b[64];
    if (nbytes > sizeof b) return -1;
    size_t got = 0;
    while (got < nbytes) {
        ssize_t r = getrandom(b + got, nbytes - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    for (size_t i = 0; i < nbytes; i++) snprintf(out + 2 * i, 3, "%02x", b[i]);
    return 0;
}

int users_token_new(const char *name, char *out, size_t outlen)
{
    char hex[USER_SECRET_HEX + 1];
    if (users_name_check(name, NULL, 0) != 0 || outlen < strlen(name) + 2 + USER_SECRET_HEX) return -1;
    if (random_hex(hex, USER_SECRET_HEX / 2) != 0) return -1;
    snprintf(out, outlen, "%s.%s", name, hex);
    return 0;
}

int users_salt_new(char salt[USER_SALT_HEX + 1]) { return random_hex(salt, USER_SALT_HEX / 2); }

void users_token_hash(const char *salt, const char *token, size_t token_len, char hex[SHA256_HEX_LEN + 1])
{
    char buf[USER_SALT_HEX + USER_TOKEN_LEN + 1];
    size_t sl = strlen(salt);
    if (sl > USER_SALT_HEX) sl = USER_SALT_HEX;
    if (token_len > USER_TOKEN_LEN) token_len = USER_TOKEN_LEN; /* callers check the shape first */
    memcpy(buf, salt, sl);
    memcpy(buf + sl, token, token_len);
    sha256_hex(buf, sl + token_len, hex);
}

int users_token_name(const char *token, size_t len, char *name, size_t namelen)
{
    if (!token || len < USER_SECRET_HEX + 2 || len > USER_TOKEN_LEN) return -1;
    size_t nl = len - USER_SECRET_HEX - 1;
    if (token[nl] != '.' || nl >= namelen) return -1;
    for (size_t i = nl + 1; i < len; i++) {
        char c = token[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return -1;
    }
    memcpy(name, token, nl);
    name[nl] = 0;
    return users_name_check(name, NULL, 0) == 0 ? 0 : -1;
}

json_t *users_record_json(const user_record_t *r)
{
    json_t *j = json_pack("{s:s, s:s, s:s, s:f, s:f, s:s, s:f}", "role", users_role_name(r->role), "salt", r->salt,
                          "hash", r->hash, "created", r->created, "expires", r->expires, "created_by", r->created_by,
                          "weight", r->weight > 0 ? r->weight : 1.0);
    /* only the limits an admin set: the others follow the role's default when it changes */
    for (size_t i = 0; j && i < NLIMIT_FIELDS; i++) {
        long v = *limit_at((user_limits_t *)&r->limits, i);
        if (v >= 0) json_object_set_new(j, LIMIT_FIELDS[i].key, json_integer(v));
    }
    if (j && r->limits.max_priority != USER_PRIO_UNSET)
        json_object_set_new(j, "max_priority", json_string(users_priority_name(r->limits.max_priority)));
    return j;
}

int users_record_parse(const char *name, const char *text, size_t len, user_record_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (users_name_check(name, err, errlen) != 0) return -1;
    json_error_t je;
    json_t *j = text ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    const char *role = json_string_value(json_object_get(j, "role"));
    const char *salt = json_string_value(json_object_get(j, "salt"));
    const char *hash = json_string_value(json_object_get(j, "hash"));
    const char *by = json_string_value(json_object_get(j, "created_by"));
    json_t *created = json_object_get(j, "created"), *expires = json_object_get(j, "expires");
    int ok = j && role && users_role_parse(role, &out->role) == 0 && salt && strlen(salt) == USER_SALT_HEX && hash &&
             sha256_hex_valid(hash) && json_is_number(created) && json_is_number(expires) &&
             json_number_value(expires) >= 0;
    if (ok) {
        snprintf(out->name, sizeof out->name, "%s", name);
        memcpy(out->salt, salt, USER_SALT_HEX + 1);
        memcpy(out->hash, hash, SHA256_HEX_LEN + 1);
        out->created = json_number_value(created);
        out->expires = json_number_value(expires);
        snprintf(out->created_by, sizeof out->created_by, "%s", by && strlen(by) <= USER_NAME_MAX ? by : "");
        /* absent (a record from before weights) or out of range: the default */
        double w = json_number_value(json_object_get(j, "weight"));
        out->weight = w > 0 && w <= USER_WEIGHT_MAX ? w : 1;
        /* absent (a record from before limits): the role's default; out of range: damaged */
        out->limits = users_limits_unset();
        for (size_t i = 0; ok && i < NLIMIT_FIELDS; i++) {
            json_t *l = json_object_get(j, LIMIT_FIELDS[i].key);
            ok = !l || (!json_is_null(l) && limit_value(l, limit_at(&out->limits, i)) == 0);
        }
        json_t *p = json_object_get(j, "max_priority");
        ok = ok && (!p || (!json_is_null(p) && priority_value(p, &out->limits.max_priority) == 0));
    }
    json_decref(j);
    return ok ? 0 : errmsg(err, errlen, "user %s: the stored record is damaged", name);
}

json_t *users_record_public(const user_record_t *r)
{
    json_t *o = json_pack("{s:s, s:s, s:f, s:s, s:f}", "name", r->name, "role", users_role_name(r->role), "created",
                          r->created, "created_by", r->created_by, "weight", r->weight > 0 ? r->weight : 1.0);
    if (o) json_object_set_new(o, "expires", r->expires > 0 ? json_real(r->expires) : json_null());
    return o;
}

/* ---- the rules ---------------------------------------------------------------------------------------------- */

static const char *act_verb(user_action_t a)
{
    switch (a) {
    case USER_ACT_CANCEL: return "cancel";
    case USER_ACT_RETRY: return "retry";
    case USER_ACT_GENERATE: return "generate from";
    case USER_ACT_MODEL_PUT: return "replace";
    case USER_ACT_MODEL_DELETE: return "delete";
    case USER_ACT_SUBMIT: return "submit jobs";
    case USER_ACT_CLUSTER: return "reload or benchmark the cluster";
    case USER_ACT_USERS: return "list, create or remove users";
    case USER_ACT_TOKEN_NEW: return "renew their token";
    case USER_ACT_ADMIN: return "use this endpoint";
    default: return "read";
    }
}

/* What a viewer was refused, as a whole ("cancel jobs"): a viewer may change nothing. */
static const char *act_what(user_action_t a)
{
    switch (a) {
    case USER_ACT_CANCEL: return "cancel jobs";
    case USER_ACT_RETRY: return "retry jobs";
    case USER_ACT_GENERATE: return "generate text from jobs";
    case USER_ACT_MODEL_PUT: return "upload models";
    case USER_ACT_MODEL_DELETE: return "delete models";
    default: return act_verb(a);
    }
}

int users_may(user_role_t role, const char *user, user_action_t act, const user_target_t *t, char *why, size_t whylen)
{
    if (role == USER_ADMIN || act == USER_ACT_READ) return 1;
    if (act == USER_ACT_TOKEN_NEW) return 1; /* every user's own credential */
    if (role != USER_MEMBER) {
        errmsg(why, whylen, "viewers may only read: to %s takes the member or admin role", act_what(act));
        return 0;
    }
    switch (act) {
    case USER_ACT_SUBMIT: return 1;
    case USER_ACT_CLUSTER:
    case USER_ACT_USERS:
    case USER_ACT_ADMIN: errmsg(why, whylen, "only admins may %s", act_verb(act)); return 0;
    default: break;
    }
    /* cancel, retry, replace, delete: the member's own only */
    if (!t) {
        errmsg(why, whylen, "members may %s only their own", act_verb(act));
        return 0;
    }
    if (act == USER_ACT_MODEL_PUT && !t->exists) return 1; /* a new upload becomes theirs */
    if (t->owner && user && strcmp(t->owner, user) == 0) return 1;
    if (t->owner && *t->owner)
        errmsg(why, whylen, "members may %s only their own %ss: %s is %s's", act_verb(act), t->kind, t->id, t->owner);
    else
        errmsg(why, whylen, "members may %s only their own %ss: %s has no owner (it predates users); only admins may",
               act_verb(act), t->kind, t->id);
    return 0;
}
