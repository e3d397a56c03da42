/* common/users.h - the users of a shared coordinator: names, roles, tokens,
 * and the one rule table that says which role may do what to whose job or model.
 *
 * Everything here is pure except the token and salt generators (getrandom). The store
 * (Redis, KEY_USERS) is coordinator/users.c; the HTTP layer (http/server.c) finds the
 * caller from the bearer token and asks users_may before a handler changes anything.
 *
 * A token is "NAME.HEX": the user's name, a dot, 64 hex digits (256 random bits). The
 * name lets the server find the one record to check without trying every user's hash;
 * it is not a secret. Only a salted hash of the token is stored (users_token_hash).
 */
#ifndef PACER_USERS_H
#define PACER_USERS_H

#include <stddef.h>

#include <jansson.h>

#include "sha256.h"

#define USER_NAME_MAX 32                                     /* characters of a name, without the NUL */
#define USER_SECRET_HEX 64                                   /* hex digits after the dot: 256 bits */
#define USER_TOKEN_LEN (USER_NAME_MAX + 1 + USER_SECRET_HEX) /* longest token, without the NUL */
#define USER_SALT_HEX 32                                     /* 128-bit salt */
#define USER_EXPIRES_MAX_S (10.0 * 365 * 24 * 3600)          /* expires_in_s: at most ten years */
#define USER_WEIGHT_MAX 1000.0                               /* a user's fair-share weight: (0, this] */
#define USER_ADMIN_NAME "admin"                              /* the daemon's own token (PACER_TOKEN, --token-file) */

typedef enum { USER_VIEWER = 0, USER_MEMBER = 1, USER_ADMIN = 2 } user_role_t;

const char *users_role_name(user_role_t r);
/* "admin", "member" or "viewer" (exact); 0, or -1. */
int users_role_parse(const char *s, user_role_t *out);

/* A user name: 1 to USER_NAME_MAX of [a-z0-9_-], starting with a letter. 0, or -1 with
 * err saying why (the name is part of a Redis field and of every token). */
int users_name_check(const char *name, char *err, size_t errlen);

/* The body of POST /api/v1/users: {"name": NAME, "role": ROLE, "expires_in_s": S}
 * (expires_in_s optional: > 0 and at most USER_EXPIRES_MAX_S; absent = never). Unknown
 * keys, a key twice, a wrong type, a bad name or role are refused with err naming the
 * field. *expires_in_s is 0 when absent. 0, or -1. Pure (fuzz/fuzz_request.c drives it). */
int users_body_parse(const char *body, size_t len, char *name, size_t namelen, user_role_t *role, double *expires_in_s,
                     char *err, size_t errlen);

/* ---- limits ------------------------------------------------------------------------------------------------
 * What one user may hold of the shared coordinator, so that nobody can fill it for the
 * others: jobs waiting in the queue, slots (ranks) their running jobs hold, uploaded models
 * they own, and the highest spec priority their jobs may ask for. Each is a user's own
 * value (set by an admin, PUT /api/v1/users/{name}) or else their role's default: members
 * the daemon's --member-max-* options, admins no count limit and priority high. A count of
 * 0 means no limit. Refusals are 429 (a count) or 403 (a priority), naming the limit. */
#define USER_LIMIT_MAX 1000000L /* the largest count a limit may be */
#define USER_LIMIT_UNSET (-1L)  /* a record's count: the role's default applies */
/* Spec priorities, as coordinator/policy.h numbers them (POLICY_PRIO_*). */
#define USER_PRIO_LOW (-1)
#define USER_PRIO_NORMAL 0
#define USER_PRIO_HIGH 1
#define USER_PRIO_UNSET (-9) /* a record's priority: the role's default applies */

typedef struct {
    long max_queued;  /* jobs of theirs in the queue at once */
    long max_slots;   /* slots (ranks) their running jobs hold at once: a job past it waits */
    long max_models;  /* uploaded models they own */
    int max_priority; /* USER_PRIO_*: the highest spec priority they may submit */
} user_limits_t;

/* "low", "normal", "high" <-> USER_PRIO_*; parse returns 0, or -1. */
const char *users_priority_name(int prio);
int users_priority_parse(const char *s, int *out);
/* A record's limits with none set (every field UNSET). */
user_limits_t users_limits_unset(void);

/* The body of PUT /api/v1/users/{name}: {"weight": W, "max_queued": N, "max_slots": N,
 * "max_models": N, "max_priority": P}, at least one of them: W a number in (0,
 * USER_WEIGHT_MAX]; N an integer from 0 (no limit) to USER_LIMIT_MAX; P "low", "normal" or
 * "high"; a limit null goes back to the role's default. What the body leaves out is
 * unchanged (weight 0, a limit field of `set` not in `present`). */
typedef struct {
    double weight;     /* 0: unchanged */
    user_limits_t set; /* the limits given (USER_LIMIT_UNSET / USER_PRIO_UNSET: null) */
    unsigned present;  /* USER_SET_* bits: which limits the body names */
} user_update_t;
#define USER_SET_QUEUED 1u
#define USER_SET_SLOTS 2u
#define USER_SET_MODELS 4u
#define USER_SET_PRIORITY 8u
/* Unknown keys, a key twice, a wrong type or a value out of range are refused with err
 * naming the field. 0, or -1. Pure (fuzz/fuzz_request.c drives it). */
int users_update_parse(const char *body, size_t len, user_update_t *out, char *err, size_t errlen);
/* Applies u's limits to a record's (lim). */
void users_update_apply(const user_update_t *u, user_limits_t *lim);

/* A new token for name into out (at least USER_TOKEN_LEN + 1 bytes), and a new salt
 * (USER_SALT_HEX + 1 bytes), from getrandom. 0, or -1 when the kernel has no randomness
 * to give (never a weaker source). */
int users_token_new(const char *name, char *out, size_t outlen);
int users_salt_new(char salt[USER_SALT_HEX + 1]);

/* The stored hash of a token: SHA-256 of salt followed by the token, in hex. A token is
 * 256 random bits, so one salted SHA-256 is enough: a slow KDF protects guessable
 * passwords, and nobody can guess 2^256. The salt keeps equal tokens (never, in
 * practice) and precomputed tables from meaning anything. */
void users_token_hash(const char *salt, const char *token, size_t token_len, char hex[SHA256_HEX_LEN + 1]);

/* The name part of a presented token (len bytes, not NUL-terminated) into name: 0 when
 * the token has the shape NAME.HEX64 and NAME passes users_name_check, else -1. */
int users_token_name(const char *token, size_t len, char *name, size_t namelen);

/* A stored record (the JSON of a KEY_USERS field; written by the coordinator, read back
 * as outside input: every field checked). */
typedef struct {
    char name[USER_NAME_MAX + 1];
    user_role_t role;
    char salt[USER_SALT_HEX + 1];
    char hash[SHA256_HEX_LEN + 1];
    double created;
    double expires; /* unix seconds; 0 = never */
    char created_by[USER_NAME_MAX + 1];
    /* Fair share (--policy fair, coordinator/policy.h): usage counts divided by it; 1
     * unless an admin set another (PUT /api/v1/users/{name}), in (0, USER_WEIGHT_MAX]. */
    double weight;
    /* Its own limits (above, "limits"): each UNSET unless an admin set it. */
    user_limits_t limits;
} user_record_t;

/* The record's stored JSON (new reference; NULL when out of memory). */
json_t *users_record_json(const user_record_t *r);
/* Parses the stored JSON of user name. 0, or -1 with err. */
int users_record_parse(const char *name, const char *text, size_t len, user_record_t *out, char *err, size_t errlen);
/* What GET /api/v1/users shows of it: {"name", "role", "created", "expires" (or null),
 * "created_by", "weight"}: never the salt or hash. */
json_t *users_record_public(const user_record_t *r);

/* The limits that bind a user of role: the record's own where set (r may be NULL: the
 * daemon's own admin, which has none), else the role's default: admins no count limit and
 * USER_PRIO_HIGH, members and viewers member_defaults. */
void users_limits_effective(const user_record_t *r, user_role_t role, const user_limits_t *member_defaults,
                            user_limits_t *out);
/* {"max_queued", "max_slots", "max_models" (null: no limit), "max_priority"}. */
json_t *users_limits_json(const user_limits_t *l);

/* ---- removed users ------------------------------------------------------------------------------------------
 * A removed user's jobs and models are not handed to the next account of that name: their
 * owner becomes "NAME#removed-N" (N counts removals, KEY_USER_REMOVALS), a name no account
 * can have ('#' is not allowed), so only admins may change them and the listings say whose
 * they were. */
#define USER_OWNER_MAX (USER_NAME_MAX + 32) /* an owner: a user name or a removed one's */
/* "NAME#removed-N" into out; 0, or -1 when it does not fit. */
int users_removed_owner(const char *name, long long n, char *out, size_t len);

/* ---- the rules ---------------------------------------------------------------------------------------------- */

typedef enum {
    USER_ACT_READ,         /* any GET */
    USER_ACT_SUBMIT,       /* POST /api/v1/jobs */
    USER_ACT_CANCEL,       /* DELETE /api/v1/jobs/{id} */
    USER_ACT_RETRY,        /* POST /api/v1/jobs/{id}/retry */
    USER_ACT_GENERATE,     /* POST /api/v1/jobs/{id}/generate: as retry, unless the daemon lets
                              every user generate (http/server.h's viewers_generate) */
    USER_ACT_MODEL_PUT,    /* PUT /api/v1/models/{name}: a new name, or a replacement */
    USER_ACT_MODEL_DELETE, /* DELETE /api/v1/models/{name} */
    USER_ACT_CLUSTER,      /* POST /api/v1/cluster/reload, /benchmark */
    USER_ACT_USERS,        /* POST, DELETE /api/v1/users */
    USER_ACT_TOKEN_NEW,    /* POST /api/v1/token: the caller's own new token */
    USER_ACT_ADMIN,        /* any other change (a route the table gives no action): admins only */
} user_action_t;

/* What an action acts on: a job or a model, whether it exists, and its owner (NULL when
 * none is recorded: jobs and models from before users existed). */
typedef struct {
    const char *kind; /* "job" or "model" */
    const char *id;
    int exists;
    const char *owner;
} user_target_t;

/* 1 when user (of role) may do act to t (NULL for actions on no object), else 0 with why
 * naming the rule ("members may cancel only their own jobs: j-3 is alice's"). Admins may
 * do anything; viewers only read; members read, submit, upload new models, renew their
 * own token, and cancel, retry, generate from, replace or delete what they own. Something with no owner
 * is an admin's to change. */
int users_may(user_role_t role, const char *user, user_action_t act, const user_target_t *t, char *why, size_t whylen);

#endif
