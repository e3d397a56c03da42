/* tests/unit/test_record_fields.c - the rank record's one table (common/record_fields.h):
 * every field is written by record_fields_hset (the worker's sink) when its group is
 * present and formatted by its type, every written field is in docs/REDIS.md, Prometheus
 * exports exactly the rows that name a metric, and http/prom.c and the API's coord_nodes
 * name no field of the record as a literal of their own. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "prom.h"
#include "record_fields.h"

/* The record with every group present and distinct values. */
static void full_record(rank_record_t *r)
{
    memset(r, 0, sizeof *r);
    r->present = (1u << RFG_N) - 1;
    r->host = "h1";
    r->device = "cuda:0";
    r->role = "worker";
    r->health = "{\"state\":\"ok\"}";
    r->waiting = "allreduce";
    r->rank = 3;
    r->pid = 4242;
    r->heartbeat = 1700000000.125;
    r->samples_per_s = 12.5;
    r->loss = NAN;
    r->waiting_peer = NAN;
    r->batch = 48;
    for (int k = 0; k < PHASE_N; k++) r->phase_s[k] = k == 1 ? INFINITY : 0.5 * k;
}

/* The value written for name, or NULL when it is not written; fails on a repeat. */
static const char *written(const char **argv, int argc, const char *name)
{
    const char *v = NULL;
    for (int i = 0; i + 1 < argc; i += 2)
        if (strcmp(argv[i], name) == 0) {
            if (v) fail_msg("%s written twice", name);
            v = argv[i + 1];
        }
    return v;
}

static void test_every_field_written(void **state)
{
    (void)state;
    rank_record_t r;
    full_record(&r);
    const char *argv[RECORD_ARGS_MAX];
    size_t len[RECORD_ARGS_MAX];
    char store[RECORD_ARGS_MAX][RECORD_VALUE_MAX];
    int argc = record_fields_hset(&r, argv, len, store, RECORD_ARGS_MAX);
    int want = 0;
    for (int f = 0; f < RF_N; f++) {
        const record_field_t *row = &RECORD_FIELDS[f];
        assert_non_null(row->name); /* no hole in the designated initialisers */
        if (row->group == RFG_API) {
            assert_null(written(argv, argc, row->name));
            continue;
        }
        if (row->type == RF_PHASES) {
            char name[RECORD_VALUE_MAX];
            for (int k = 0; k < PHASE_N; k++, want++) {
                snprintf(name, sizeof name, row->name, PHASE_NAMES[k]);
                if (!written(argv, argc, name)) fail_msg("phase field %s not written", name);
                assert_ptr_equal(record_field_find(name), row);
            }
            continue;
        }
        if (!written(argv, argc, row->name)) fail_msg("field %s not written", row->name);
        assert_ptr_equal(record_field_find(row->name), row);
        want++;
        for (int g = 0; g < f; g++)
            if (strcmp(RECORD_FIELDS[g].name, row->name) == 0) fail_msg("%s is in the table twice", row->name);
    }
    assert_int_equal(argc, 2 * want);
    for (int i = 0; i < argc; i++) assert_int_equal(len[i], strlen(argv[i]));
    /* Formatted by type: an integer, a unix time, a number, unmeasured as "" (never 0). */
    assert_string_equal(written(argv, argc, "rank"), "3");
    assert_string_equal(written(argv, argc, "host"), "h1");
    assert_string_equal(written(argv, argc, "heartbeat"), "1700000000.125");
    assert_string_equal(written(argv, argc, "samples_per_s"), "12.5");
    assert_string_equal(written(argv, argc, "loss"), "");
    assert_string_equal(written(argv, argc, "waiting_peer"), "");
    assert_string_equal(written(argv, argc, "phase_compute_s"), "0");
    assert_string_equal(written(argv, argc, "phase_comm_s"), "1");
    assert_null(record_field_find("no_such_field"));

    /* Only the groups present: before the first step, the always-present fields. */
    r.present = 1u << RFG_ALWAYS;
    argc = record_fields_hset(&r, argv, len, store, RECORD_ARGS_MAX);
    want = 0;
    for (int f = 0; f < RF_N; f++) want += RECORD_FIELDS[f].group == RFG_ALWAYS;
    assert_int_equal(argc, 2 * want);
    assert_null(written(argv, argc, "loss"));
    /* A short vector takes what fits, whole pairs only. */
    r.present = (1u << RFG_N) - 1;
    assert_int_equal(record_fields_hset(&r, argv, len, store, 5), 4);
}

/* Reads the text of path; from/to (optional) cut it to the part between two markers. */
static char *source(const char *path, const char *from, const char *to)
{
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s not found: run the unit tests from the repository root", path);
    static char text[1 << 18];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    char *s = from ? strstr(text, from) : text;
    if (!s) fail_msg("%s: no %s", path, from);
    char *e = to ? strstr(s, to) : NULL;
    if (e) *e = 0;
    return s;
}

/* The staleness hash: every field written once, and read back into the same statistics. */
static void test_staleness_fields(void **state)
{
    (void)state;
    staleness_t st, back;
    memset(&st, 0, sizeof st);
    st.count = 40;
    st.sum = 50;
    st.sumsq = 90;
    st.max = 7;
    st.p50 = 1;
    st.p95 = 3;
    st.overflow = 2;
    for (int b = 0; b < STALENESS_BUCKETS; b++) st.hist[b] = 100 + b;
    const char *argv[RECORD_STALENESS_ARGS_MAX];
    size_t len[RECORD_STALENESS_ARGS_MAX];
    char store[RECORD_STALENESS_ARGS_MAX][RECORD_VALUE_MAX];
    int argc = record_staleness_hset(&st, argv, len, store, RECORD_STALENESS_ARGS_MAX);
    assert_int_equal(argc, RECORD_STALENESS_ARGS_MAX);
    assert_string_equal(written(argv, argc, "count"), "40");
    assert_string_equal(written(argv, argc, "h8"), "108");
    memset(&back, 0, sizeof back);
    for (int i = 0; i + 1 < argc; i += 2) assert_int_equal(record_staleness_set(&back, argv[i], atoll(argv[i + 1])), 0);
    assert_memory_equal(&st, &back, sizeof st);
    assert_int_equal(record_staleness_set(&back, "h9", 1), -1);
    assert_int_equal(record_staleness_set(&back, "mean", 1), -1);
    assert_int_equal(record_staleness_set(&back, "h", 1), -1);
}

/* docs/REDIS.md names every field the worker writes. */
static void test_fields_documented(void **state)
{
    (void)state;
    const char *doc = source("docs/REDIS.md", NULL, NULL);
    char quoted[RECORD_VALUE_MAX + 2], name[RECORD_VALUE_MAX];
    for (int i = 0; i < RF_N; i++) {
        const record_field_t *row = &RECORD_FIELDS[i];
        if (row->group == RFG_API) continue;
        for (int k = 0; k < (row->type == RF_PHASES ? PHASE_N : 1); k++) {
            if (row->type == RF_PHASES) snprintf(name, sizeof name, row->name, PHASE_NAMES[k]);
            else snprintf(name, sizeof name, "%s", row->name);
            snprintf(quoted, sizeof quoted, "`%s`", name);
            if (!strstr(doc, quoted)) fail_msg("docs/REDIS.md does not describe the node field %s", quoted);
        }
    }
}

/* GET /metrics exports one family per row that names a metric (and the staleness and
 * phase families), read from the rank object by the row's name. */
static void test_prom_reads_the_table(void **state)
{
    (void)state;
    json_t *rank = json_object();
    for (int f = 0; f < RF_N; f++) json_object_set_new(rank, RECORD_FIELDS[f].name, json_integer(7));
    json_object_set_new(rank, "rank", json_integer(0));
    json_object_set_new(rank, "not_a_record_field", json_integer(9));
    json_t *node = json_pack("{s:s, s:[o]}", "job", "j-1", "ranks", rank);
    prom_input_t in;
    memset(&in, 0, sizeof in);
    in.nodes = &node;
    in.nnodes = 1;
    size_t len;
    char *text = prom_render(&in, &len);
    assert_non_null(text);
    int rows = 0;
    char want[160];
    for (int f = 0; f < RF_N; f++) {
        const record_field_t *row = &RECORD_FIELDS[f];
        if (!row->prom) continue;
        rows++;
        assert_true(strcmp(row->prom_type, "gauge") == 0 || strcmp(row->prom_type, "counter") == 0);
        assert_non_null(row->prom_help);
        snprintf(want, sizeof want, "\n%s{job=\"j-1\",rank=\"0\"} 7\n", row->prom);
        if (!strstr(text, want)) fail_msg("missing: %s", want + 1);
    }
    /* Nothing else of the rank object is a sample: one line per row that names a metric. */
    int samples = 0;
    for (const char *p = text; (p = strstr(p, "{job=\"j-1\",rank=\"0\"}")); p++) samples++;
    assert_int_equal(samples, rows);
    assert_null(strstr(text, " 9\n"));
    free(text);
    json_decref(node);
}

/* The help of each family whose figure a language model's rank reports in other units
 * says so: a sample is a window of block_size tokens, the loss nats per token, the test
 * accuracy the next token's. A reader of a GPT job's metrics otherwise reads an image
 * classifier's words. */
static void test_prom_help_language_model(void **state)
{
    (void)state;
    const struct {
        record_field_id_t f;
        const char *says;
    } want[] = {{RF_SAMPLES_PER_S, "tokens/s are this x block_size"},
                {RF_BATCH, "windows of block_size tokens"},
                {RF_LOSS, "nats per token"},
                {RF_TEST_ACCURACY, "next-token accuracy"}};
    json_t *rank = json_pack("{s:i, s:f, s:i, s:f, s:f}", "rank", 0, RECORD_FIELDS[RF_SAMPLES_PER_S].name, 1.5,
                             RECORD_FIELDS[RF_BATCH].name, 8, RECORD_FIELDS[RF_LOSS].name, 2.5,
                             RECORD_FIELDS[RF_TEST_ACCURACY].name, 0.25);
    json_t *node = json_pack("{s:s, s:[o]}", "job", "j-1", "ranks", rank);
    prom_input_t in;
    memset(&in, 0, sizeof in);
    in.nodes = &node;
    in.nnodes = 1;
    size_t len;
    char *text = prom_render(&in, &len);
    assert_non_null(text);
    char head[128];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        snprintf(head, sizeof head, "# HELP %s ", RECORD_FIELDS[want[i].f].prom);
        const char *h = strstr(text, head);
        if (!h) fail_msg("no %s", head);
        const char *eol = strchr(h, '\n');
        const char *says = strstr(h, want[i].says);
        if (!says || says > eol) fail_msg("%.*s: does not say \"%s\"", (int)(eol - h), h, want[i].says);
    }
    free(text);
    json_decref(node);
}

/* A Redis command's literal ("HMGET %s step total_steps") names no field of the record
 * among its words: the names are arguments from the table. */
static void redis_commands_name_no_field(const char *path, const char *text)
{
    static const char *const commands[] = {"\"HGET ", "\"HMGET ", "\"HSET ", "\"HDEL "};
    for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
        for (const char *p = text; (p = strstr(p, commands[c])); p++) {
            const char *end = strchr(p + 1, '"');
            assert_non_null(end);
            for (const char *w = p + 1; w < end;) {
                size_t len = strcspn(w, " \"");
                for (int f = 0; f < RF_N; f++)
                    if (strlen(RECORD_FIELDS[f].name) == len && strncmp(w, RECORD_FIELDS[f].name, len) == 0)
                        fail_msg("%s: the command %.*s spells the record's field %s", path, (int)(end - p + 1), p,
                                 RECORD_FIELDS[f].name);
                w += len + (w[len] == ' ');
            }
        }
}

/* The readers take the names from the table: neither http/prom.c nor the API's
 * coord_nodes, nor the coordinator's tick (run_tick.c read_flags) and dynamic batching
 * (dynbatch.c) spell a field of the rank record as a literal. */
static void test_readers_name_no_field(void **state)
{
    (void)state;
    const struct {
        const char *path, *from, *to;
    } readers[] = {{"http/prom.c", NULL, NULL},
                   {"coordinator/api.c", "int coord_nodes(", "\n}\n"},
                   {"coordinator/api.c", "static int staleness_from_reply(", "\n}\n"},
                   {"coordinator/run_tick.c", "static void read_flags(", "\n}\n"},
                   {"coordinator/dynbatch.c", "int dynbatch_replan(", "\n}\n"},
                   /* up to the profile hash (KEY_PROFILE), whose fields are its own */
                   {"coordinator/dynbatch.c", "int dynbatch_fold_profiles(", "profile_key("}};
    char quoted[RECORD_VALUE_MAX + 2];
    for (size_t i = 0; i < sizeof readers / sizeof readers[0]; i++) {
        const char *text = source(readers[i].path, readers[i].from, readers[i].to);
        for (int f = 0; f < RF_N; f++) {
            const char *name = RECORD_FIELDS[f].name;
            if (RECORD_FIELDS[f].type == RF_PHASES) snprintf(quoted, sizeof quoted, "\"%.6s", name);
            else snprintf(quoted, sizeof quoted, "\"%s\"", name);
            if (strstr(text, quoted)) fail_msg("%s spells the record's field %s itself", readers[i].path, quoted);
        }
        redis_commands_name_no_field(readers[i].path, text);
        /* The staleness hash's names too (prom.c reads the API's staleness object, whose
         * "count", "mean" and "p95" are the API's own: only the API's reader is checked). */
        for (int f = 0; i > 0 && f < RECORD_STALENESS_SCALARS; f++) {
            snprintf(quoted, sizeof quoted, "\"%s\"", RECORD_STALENESS_FIELDS[f].name);
            if (strstr(text, quoted)) fail_msg("%s spells the staleness field %s itself", readers[i].path, quoted);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_field_written),   cmocka_unit_test(test_staleness_fields),
        cmocka_unit_test(test_fields_documented),     cmocka_unit_test(test_prom_reads_the_table),
        cmocka_unit_test(test_readers_name_no_field), cmocka_unit_test(test_prom_help_language_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
