/* tests/unit/test_users.c - issue 45's users, the pure parts (common/users.h): the role
 * rules and their messages, tokens and their salted hashes, the users body and the stored
 * record, the limits (their update, the role's defaults, the record) and a removed user's
 * owner name. The same rules through a real coordinator: tests/integration/users_roles.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "users.h"

/* may ROLE USER ACT TARGET -> 1, or 0 with the message in why */
static char why[256];
static int may(user_role_t r, const char *user, user_action_t a, const char *kind, const char *id, int exists,
               const char *owner)
{
    user_target_t t = {.kind = kind, .id = id, .exists = exists, .owner = owner};
    why[0] = 0;
    return users_may(r, user, a, kind ? &t : NULL, why, sizeof why);
}

static void test_rules(void **state)
{
    (void)state;
    /* admins: anything, whoever owns it */
    assert_true(may(USER_ADMIN, "root", USER_ACT_CANCEL, "job", "j-3", 1, "alice"));
    assert_true(may(USER_ADMIN, "root", USER_ACT_USERS, NULL, NULL, 0, NULL));
    assert_true(may(USER_ADMIN, "root", USER_ACT_MODEL_DELETE, "model", "m", 1, NULL));
    /* viewers: read only */
    assert_true(may(USER_VIEWER, "carol", USER_ACT_READ, NULL, NULL, 0, NULL));
    assert_false(may(USER_VIEWER, "carol", USER_ACT_SUBMIT, NULL, NULL, 0, NULL));
    assert_string_equal(why, "viewers may only read: to submit jobs takes the member or admin role");
    assert_false(may(USER_VIEWER, "carol", USER_ACT_CANCEL, "job", "j-1", 1, "carol"));
    assert_string_equal(why, "viewers may only read: to cancel jobs takes the member or admin role");
    assert_true(may(USER_VIEWER, "carol", USER_ACT_TOKEN_NEW, NULL, NULL, 0, NULL));
    /* members: their own */
    assert_true(may(USER_MEMBER, "alice", USER_ACT_SUBMIT, NULL, NULL, 0, NULL));
    assert_true(may(USER_MEMBER, "alice", USER_ACT_CANCEL, "job", "j-3", 1, "alice"));
    assert_true(may(USER_MEMBER, "alice", USER_ACT_RETRY, "job", "j-3", 1, "alice"));
    assert_false(may(USER_MEMBER, "bob", USER_ACT_CANCEL, "job", "j-3", 1, "alice"));
    assert_string_equal(why, "members may cancel only their own jobs: j-3 is alice's");
    assert_false(may(USER_MEMBER, "bob", USER_ACT_RETRY, "job", "j-3", 1, "alice"));
    assert_string_equal(why, "members may retry only their own jobs: j-3 is alice's");
    /* generation: retry's rule (the daemon's --viewers-generate widens it before asking) */
    assert_true(may(USER_MEMBER, "alice", USER_ACT_GENERATE, "job", "j-3", 1, "alice"));
    assert_false(may(USER_MEMBER, "bob", USER_ACT_GENERATE, "job", "j-3", 1, "alice"));
    assert_string_equal(why, "members may generate from only their own jobs: j-3 is alice's");
    assert_false(may(USER_VIEWER, "carol", USER_ACT_GENERATE, "job", "j-3", 1, "alice"));
    assert_string_equal(why, "viewers may only read: to generate text from jobs takes the member or admin role");
    assert_false(may(USER_MEMBER, "alice", USER_ACT_CANCEL, "job", "j-1", 1, NULL));
    assert_string_equal(why, "members may cancel only their own jobs: j-1 has no owner (it predates users); only "
                             "admins may");
    assert_true(may(USER_MEMBER, "bob", USER_ACT_MODEL_PUT, "model", "m1", 0, NULL)); /* a new name */
    assert_false(may(USER_MEMBER, "bob", USER_ACT_MODEL_PUT, "model", "m1", 1, "alice"));
    assert_string_equal(why, "members may replace only their own models: m1 is alice's");
    assert_false(may(USER_MEMBER, "bob", USER_ACT_MODEL_DELETE, "model", "m1", 1, "alice"));
    assert_string_equal(why, "members may delete only their own models: m1 is alice's");
    assert_false(may(USER_MEMBER, "alice", USER_ACT_CLUSTER, NULL, NULL, 0, NULL));
    assert_string_equal(why, "only admins may reload or benchmark the cluster");
    assert_false(may(USER_MEMBER, "alice", USER_ACT_USERS, NULL, NULL, 0, NULL));
    assert_false(may(USER_MEMBER, "alice", USER_ACT_ADMIN, NULL, NULL, 0, NULL));
    assert_string_equal(why, "only admins may use this endpoint");
    /* a prefix of the owner's name is not the owner */
    assert_false(may(USER_MEMBER, "ali", USER_ACT_CANCEL, "job", "j-3", 1, "alice"));
}

static void test_tokens(void **state)
{
    (void)state;
    char a[USER_TOKEN_LEN + 1], b[USER_TOKEN_LEN + 1], name[USER_NAME_MAX + 1];
    assert_int_equal(users_token_new("alice", a, sizeof a), 0);
    assert_int_equal(users_token_new("alice", b, sizeof b), 0);
    assert_int_equal(strlen(a), 5 + 1 + USER_SECRET_HEX);
    assert_string_not_equal(a, b);
    assert_int_equal(users_token_name(a, strlen(a), name, sizeof name), 0);
    assert_string_equal(name, "alice");
    assert_int_equal(users_token_new("Bad", a, sizeof a), -1);
    assert_int_equal(users_token_new("alice", a, 10), -1); /* no room */
    /* shapes that are not a user token */
    const char *bad[] = {"",
                         "alice",
                         "alice.",
                         "alice.abc",
                         ".0000000000000000000000000000000000000000000000000000000000000000",
                         "Alice.0000000000000000000000000000000000000000000000000000000000000000",
                         "alice.000000000000000000000000000000000000000000000000000000000000000G",
                         "al/ce.0000000000000000000000000000000000000000000000000000000000000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(users_token_name(bad[i], strlen(bad[i]), name, sizeof name), -1);
    /* the salted hash: depends on salt and token, and is what is stored */
    char s1[USER_SALT_HEX + 1], s2[USER_SALT_HEX + 1], h1[SHA256_HEX_LEN + 1], h2[SHA256_HEX_LEN + 1];
    assert_int_equal(users_salt_new(s1), 0);
    assert_int_equal(users_salt_new(s2), 0);
    assert_int_equal(strlen(s1), USER_SALT_HEX);
    assert_string_not_equal(s1, s2);
    users_token_hash(s1, b, strlen(b), h1);
    users_token_hash(s2, b, strlen(b), h2);
    assert_true(sha256_hex_valid(h1));
    assert_string_not_equal(h1, h2);
    users_token_hash(s1, b, strlen(b), h2);
    assert_string_equal(h1, h2);
    assert_null(strstr(h1, b + 6));
}

static void test_body(void **state)
{
    (void)state;
    char name[USER_NAME_MAX + 1], err[256];
    user_role_t role;
    double exp;
#define BODY(s) users_body_parse(s, strlen(s), name, sizeof name, &role, &exp, err, sizeof err)
    assert_int_equal(BODY("{\"name\": \"alice\", \"role\": \"member\"}"), 0);
    assert_string_equal(name, "alice");
    assert_int_equal(role, USER_MEMBER);
    assert_true(exp == 0);
    assert_int_equal(BODY("{\"name\": \"carol\", \"role\": \"viewer\", \"expires_in_s\": 3.5}"), 0);
    assert_true(exp == 3.5);
    struct {
        const char *body, *err;
    } bad[] = {
        {"", "the request body is empty"},
        {"[1]", "the body must be a JSON object {\"name\", \"role\", \"expires_in_s\"}"},
        {"{\"role\": \"member\"}", "name: required, a string"},
        {"{\"name\": 5, \"role\": \"member\"}", "name: required, a string"},
        {"{\"name\": \"\", \"role\": \"member\"}", "name: empty"},
        {"{\"name\": \"9lives\", \"role\": \"member\"}", "name: must start with a letter a-z"},
        {"{\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", \"role\": \"member\"}", "name: longer than 32 characters"},
        {"{\"name\": \"a.b\", \"role\": \"member\"}", "name: only a-z, 0-9, '_' and '-' are allowed"},
        {"{\"name\": \"alice\", \"role\": \"Admin\"}", "role: required, one of admin, member, viewer"},
        {"{\"name\": \"alice\"}", "role: required, one of admin, member, viewer"},
        {"{\"name\": \"alice\", \"role\": \"member\", \"expires_in_s\": 0}",
         "expires_in_s: must be a number of seconds > 0 and at most 315360000 (ten years)"},
        {"{\"name\": \"alice\", \"role\": \"member\", \"expires_in_s\": \"1\"}",
         "expires_in_s: must be a number of seconds > 0 and at most 315360000 (ten years)"},
        {"{\"name\": \"alice\", \"role\": \"member\", \"expires_in_s\": 1e300}",
         "expires_in_s: must be a number of seconds > 0 and at most 315360000 (ten years)"},
        {"{\"name\": \"alice\", \"role\": \"member\", \"admin\": true}",
         "admin: unknown field (name, role and expires_in_s are)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(BODY(bad[i].body), -1);
        assert_string_equal(err, bad[i].err);
    }
    assert_int_equal(BODY("{\"name\": \"a\", \"name\": \"b\", \"role\": \"member\"}"), -1); /* a key twice */
    assert_non_null(strstr(err, "duplicate"));
    assert_int_equal(users_body_parse("{\"name\":\"a\"\0}", 13, name, sizeof name, &role, &exp, err, sizeof err), -1);
    assert_string_equal(err, "the request body contains a NUL byte");
#undef BODY
}

/* PUT /api/v1/users/{name}'s body: {"weight": W} (fair share, --policy fair) and the
 * limits (max_queued, max_slots, max_models: a count, 0 = no limit, null = the role's
 * default; max_priority: low, normal, high or null), at least one of them. */
static void test_update_body(void **state)
{
    (void)state;
    char err[256];
    user_update_t u;
#define UPD(s) users_update_parse(s, strlen(s), &u, err, sizeof err)
    assert_int_equal(UPD("{\"weight\": 2.5}"), 0);
    assert_true(u.weight == 2.5);
    assert_int_equal(u.present, 0);
    assert_int_equal(UPD("{\"weight\": 1000}"), 0);
    assert_int_equal(UPD("{\"max_queued\": 300, \"max_slots\": 0, \"max_models\": null, \"max_priority\": \"high\"}"),
                     0);
    assert_true(u.weight == 0); /* unchanged */
    assert_int_equal(u.present, USER_SET_QUEUED | USER_SET_SLOTS | USER_SET_MODELS | USER_SET_PRIORITY);
    assert_int_equal(u.set.max_queued, 300);
    assert_int_equal(u.set.max_slots, 0);
    assert_int_equal(u.set.max_models, USER_LIMIT_UNSET);
    assert_int_equal(u.set.max_priority, USER_PRIO_HIGH);
    assert_int_equal(UPD("{\"max_priority\": null}"), 0);
    assert_int_equal(u.present, USER_SET_PRIORITY);
    assert_int_equal(u.set.max_priority, USER_PRIO_UNSET);
    struct {
        const char *body, *err;
    } bad[] = {
        {"", "the request body is empty"},
        {"[1]", "the body must be a JSON object {\"weight\", \"max_queued\", \"max_slots\", \"max_models\", "
                "\"max_priority\"}"},
        {"{}", "the body names nothing to change: weight, max_queued, max_slots, max_models or max_priority"},
        {"{\"weight\": 0}", "weight: must be a number > 0 and at most 1000"},
        {"{\"weight\": -1}", "weight: must be a number > 0 and at most 1000"},
        {"{\"weight\": 1000.5}", "weight: must be a number > 0 and at most 1000"},
        {"{\"weight\": \"2\"}", "weight: must be a number > 0 and at most 1000"},
        {"{\"weight\": null}", "weight: must be a number > 0 and at most 1000"},
        {"{\"weight\": 1, \"role\": \"admin\"}",
         "role: unknown field (a user's update takes weight, max_queued, max_slots, max_models and max_priority)"},
        {"{\"max_queued\": -1}", "max_queued: an integer from 0 (no limit) to 1000000, or null (the role's default)"},
        {"{\"max_slots\": 1000001}", "max_slots: an integer from 0 (no limit) to 1000000, or null (the role's default)"},
        {"{\"max_models\": 2.5}", "max_models: an integer from 0 (no limit) to 1000000, or null (the role's default)"},
        {"{\"max_models\": \"3\"}", "max_models: an integer from 0 (no limit) to 1000000, or null (the role's default)"},
        {"{\"max_priority\": \"urgent\"}", "max_priority: one of low, normal, high, or null (the role's default)"},
        {"{\"max_priority\": 1}", "max_priority: one of low, normal, high, or null (the role's default)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(UPD(bad[i].body), -1);
        assert_string_equal(err, bad[i].err);
    }
    assert_int_equal(UPD("{\"weight\": 1, \"weight\": 2}"), -1); /* a key twice */
    assert_non_null(strstr(err, "duplicate"));
    assert_int_equal(users_update_parse("{\"weight\":1\0}", 13, &u, err, sizeof err), -1);
    assert_string_equal(err, "the request body contains a NUL byte");
#undef UPD
}

/* The limits that bind a user: their own where an admin set them, else their role's
 * (members: the daemon's defaults; admins: no count limit, priority high); an update
 * changes only what it names, null back to the default; the stored record keeps only the
 * set ones and refuses a damaged one. A removed user's owner name is no user's. */
static void test_limits(void **state)
{
    (void)state;
    const user_limits_t member = {256, 0, 32, USER_PRIO_NORMAL};
    user_record_t r = {.role = USER_MEMBER, .created = 1, .limits = users_limits_unset()};
    strcpy(r.name, "alice");
    strcpy(r.salt, "0123456789abcdef0123456789abcdef");
    memset(r.hash, '0', 64);
    r.hash[64] = 0;
    user_limits_t e;
    users_limits_effective(&r, USER_MEMBER, &member, &e);
    assert_int_equal(e.max_queued, 256);
    assert_int_equal(e.max_slots, 0);
    assert_int_equal(e.max_models, 32);
    assert_int_equal(e.max_priority, USER_PRIO_NORMAL);
    users_limits_effective(NULL, USER_ADMIN, &member, &e); /* the daemon's own admin */
    assert_true(e.max_queued == 0 && e.max_slots == 0 && e.max_models == 0 && e.max_priority == USER_PRIO_HIGH);
    users_limits_effective(&r, USER_ADMIN, &member, &e); /* an admin's record without limits of its own */
    assert_true(e.max_queued == 0 && e.max_priority == USER_PRIO_HIGH);
    char err[256];
    user_update_t u;
    const char *body = "{\"max_queued\": 300, \"max_slots\": 4, \"max_priority\": \"low\"}";
    assert_int_equal(users_update_parse(body, strlen(body), &u, err, sizeof err), 0);
    users_update_apply(&u, &r.limits);
    users_limits_effective(&r, USER_MEMBER, &member, &e);
    assert_true(e.max_queued == 300 && e.max_slots == 4 && e.max_models == 32 && e.max_priority == USER_PRIO_LOW);
    /* stored and read back: only what was set is in the record */
    json_t *j = users_record_json(&r);
    assert_int_equal(json_integer_value(json_object_get(j, "max_queued")), 300);
    assert_null(json_object_get(j, "max_models"));
    assert_string_equal(json_string_value(json_object_get(j, "max_priority")), "low");
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    user_record_t back;
    assert_int_equal(users_record_parse("alice", text, strlen(text), &back, err, sizeof err), 0);
    free(text);
    assert_true(back.limits.max_queued == 300 && back.limits.max_slots == 4 &&
                back.limits.max_models == USER_LIMIT_UNSET && back.limits.max_priority == USER_PRIO_LOW);
    /* null: back to the role's default; what the body leaves out stays */
    body = "{\"max_queued\": null, \"max_models\": 0}";
    assert_int_equal(users_update_parse(body, strlen(body), &u, err, sizeof err), 0);
    users_update_apply(&u, &back.limits);
    users_limits_effective(&back, USER_MEMBER, &member, &e);
    assert_true(e.max_queued == 256 && e.max_slots == 4 && e.max_models == 0 && e.max_priority == USER_PRIO_LOW);
    json_t *lj = users_limits_json(&e);
    assert_true(json_integer_value(json_object_get(lj, "max_queued")) == 256);
    assert_true(json_is_null(json_object_get(lj, "max_models"))); /* 0: no limit */
    assert_string_equal(json_string_value(json_object_get(lj, "max_priority")), "low");
    json_decref(lj);
    /* a stored limit out of range, or of the wrong type, is a damaged record */
    const char *damaged[] = {"{\"role\":\"member\",\"salt\":\"0123456789abcdef0123456789abcdef\",\"hash\":"
                             "\"0000000000000000000000000000000000000000000000000000000000000000\",\"created\":1,"
                             "\"expires\":0,\"max_slots\":-3}",
                             "{\"role\":\"member\",\"salt\":\"0123456789abcdef0123456789abcdef\",\"hash\":"
                             "\"0000000000000000000000000000000000000000000000000000000000000000\",\"created\":1,"
                             "\"expires\":0,\"max_priority\":\"top\"}"};
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(users_record_parse("alice", damaged[i], strlen(damaged[i]), &back, err, sizeof err), -1);
        assert_string_equal(err, "user alice: the stored record is damaged");
    }
    /* priorities by name */
    int p = 7;
    assert_int_equal(users_priority_parse("high", &p), 0);
    assert_int_equal(p, USER_PRIO_HIGH);
    assert_int_equal(users_priority_parse("High", &p), -1);
    assert_int_equal(users_priority_parse(NULL, &p), -1);
    assert_string_equal(users_priority_name(USER_PRIO_LOW), "low");
    /* a removed user's owner: never a name a user can have, never cut to one */
    char owner[USER_OWNER_MAX + 1];
    assert_int_equal(users_removed_owner("alice", 3, owner, sizeof owner), 0);
    assert_string_equal(owner, "alice#removed-3");
    assert_int_equal(users_name_check(owner, NULL, 0), -1);
    assert_int_equal(users_removed_owner("abcdefghijklmnopqrstuvwxyz012345", 123456789, owner, sizeof owner), 0);
    char small[8];
    assert_int_equal(users_removed_owner("alice", 3, small, sizeof small), -1);
    /* and the rules refuse the next account of the name what the removed one owned */
    assert_false(may(USER_MEMBER, "alice", USER_ACT_CANCEL, "job", "j-3", 1, "alice#removed-3"));
    assert_string_equal(why, "members may cancel only their own jobs: j-3 is alice#removed-3's");
}

static void test_record(void **state)
{
    (void)state;
    user_record_t r = {.role = USER_VIEWER, .created = 100, .expires = 200, .limits = users_limits_unset()}, back;
    strcpy(r.name, "carol");
    strcpy(r.created_by, "admin");
    assert_int_equal(users_salt_new(r.salt), 0);
    users_token_hash(r.salt, "carol.x", 7, r.hash);
    json_t *j = users_record_json(&r);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    char err[128];
    assert_int_equal(users_record_parse("carol", text, strlen(text), &back, err, sizeof err), 0);
    free(text);
    assert_string_equal(back.name, "carol");
    assert_int_equal(back.role, USER_VIEWER);
    assert_string_equal(back.salt, r.salt);
    assert_string_equal(back.hash, r.hash);
    assert_true(back.expires == 200);
    assert_true(back.weight == 1); /* none set: the default */
    back.weight = 3;
    j = users_record_json(&back);
    text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    assert_int_equal(users_record_parse("carol", text, strlen(text), &back, err, sizeof err), 0);
    free(text);
    assert_true(back.weight == 3);
    /* a record from before weights, or a weight out of range: 1 */
    const char *old = "{\"role\":\"viewer\",\"salt\":\"0123456789abcdef0123456789abcdef\",\"hash\":"
                      "\"0000000000000000000000000000000000000000000000000000000000000000\",\"created\":1,"
                      "\"expires\":0,\"weight\":-4}";
    assert_int_equal(users_record_parse("carol", old, strlen(old), &back, err, sizeof err), 0);
    assert_true(back.weight == 1);
    /* damaged records authenticate nobody */
    const char *bad[] = {"", "{}", "{\"role\":\"god\",\"salt\":\"00\",\"hash\":\"x\",\"created\":1,\"expires\":0}",
                         "{\"role\":\"admin\",\"salt\":\"0123456789abcdef0123456789abcdef\",\"hash\":\"x\","
                         "\"created\":1,\"expires\":0}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(users_record_parse("carol", bad[i], strlen(bad[i]), &back, err, sizeof err), -1);
        assert_string_equal(err, "user carol: the stored record is damaged");
    }
    json_t *pub = users_record_public(&r);
    assert_null(json_object_get(pub, "salt"));
    assert_null(json_object_get(pub, "hash"));
    assert_string_equal(json_string_value(json_object_get(pub, "role")), "viewer");
    assert_true(json_real_value(json_object_get(pub, "weight")) == 1);
    json_decref(pub);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rules),       cmocka_unit_test(test_tokens), cmocka_unit_test(test_body),
        cmocka_unit_test(test_update_body), cmocka_unit_test(test_record), cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
