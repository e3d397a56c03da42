/* fuzz/fuzz_redis.c - libFuzzer target for the parsers of Redis replies: the worker's
 * batch assignment (redis_report_parse_assignment), the coordinator's stored assignment,
 * node hashes and profile speeds (dynbatch_parse_*), the host classes' profiles
 * (hclass_parse_profile, then hclass_group over what it took), and the reply helpers under them
 * (reply_int, reply_double, reply_str). Build and run: make fuzz-redis.
 *
 * The input is what a Redis server (or something posing as one) sends: RESP bytes, fed
 * to hiredis's own reader in two pieces (the first byte says where to cut), and every
 * complete reply goes through every parser. Invariants: the parsers keep their outputs
 * inside the documented ranges whatever the reply holds.
 */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "dynbatch.h"
#include "hclass.h"
#include "jobstore.h"
#include "redis_report.h"

enum { CAP = 64 };

static void parse_all(const redisReply *r, int n)
{
    int b[CAP], got = -1;
    int64_t version = 0;
    int rc = redis_report_parse_assignment(r, &version, b, CAP, &got);
    if (rc == 1) {
        if (version <= 0 || got < 0 || got > CAP) abort();
        for (int i = 0; i < got; i++)
            if (b[i] < 0) abort();
    } else if (got != 0 || (rc == -1 && version == 0)) {
        abort();
    }

    hclass_profile_t prof;
    if (hclass_parse_profile(r, &prof)) {
        if (!(prof.samples_per_s > 0) || !isfinite(prof.samples_per_s) || !prof.host[0] || !prof.model[0] ||
            strlen(prof.host) >= sizeof prof.host || strlen(prof.model) >= sizeof prof.model)
            abort();
        /* one host alone: its own fastest, class x1 */
        const char *hn[] = {prof.host};
        int sl[] = {1}, us[] = {1}, cl[1];
        policy_class_t cls[POLICY_CLASSES_MAX];
        char names[POLICY_CLASSES_MAX][HCLASS_NAME_MAX];
        if (hclass_group(&prof, 1, hn, sl, us, 1, cl, cls, names) != 1 || cl[0] != 0 || strcmp(names[0], "x1") != 0)
            abort();
    } else if (prof.samples_per_s != 0) {
        abort();
    }

    int cur[CAP];
    long long v = -5;
    dynbatch_parse_assignment(r, n, 32, cur, &v);
    if (v < 0) abort();
    for (int i = 0; i < n; i++)
        if (cur[i] < 1) abort();

    char host[64], dev[16];
    double speed = 0;
    if (dynbatch_parse_node(r, host, sizeof host, dev, sizeof dev, &speed) == 1) {
        if (!(speed > 0) || !isfinite(speed) || !host[0] || !dev[0]) abort();
        if (strnlen(host, sizeof host) == sizeof host || strnlen(dev, sizeof dev) == sizeof dev) abort();
    }
    double s = dynbatch_parse_speed(r);
    if (s < 0 || !isfinite(s)) abort();

    (void)reply_int(r, 0);
    (void)reply_double(r, 0);
    const char *str = reply_str(r);
    if (str) (void)strlen(str);
    /* the elements of an array reply are replies of their own (HGETALL, XRANGE entries) */
    if (r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements && i < 16; i++) parse_all(r->element[i], n);
}

/* hiredis 0.14 (Debian 12) allocates an array reply's element table from the count in
 * its header, before any element arrives: "*2000000000" is a 16 GB calloc inside hiredis,
 * which newer hiredis caps (maxelements). That is the library's limit, not our parsers',
 * so inputs announcing more than this many elements are skipped. */
#define ARRAY_MAX 100000

static int huge_array(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != '*') continue;
        unsigned long long v = 0;
        for (size_t k = i + 1; k < n && p[k] >= '0' && p[k] <= '9'; k++)
            if ((v = v * 10 + (p[k] - '0')) > ARRAY_MAX) return 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || huge_array(data, size)) return 0;
    size_t cut = data[0] % size;
    int n = 1 + data[1] % CAP;
    data += 2, size -= 2;
    if (cut > size) cut = size;
    redisReader *rd = redisReaderCreate();
    if (!rd) return 0;
    void *reply = NULL;
    int ok = redisReaderFeed(rd, (const char *)data, cut) == REDIS_OK;
    for (int pass = 0; ok && pass < 2; pass++) {
        while (ok && (ok = redisReaderGetReply(rd, &reply) == REDIS_OK) && reply) {
            parse_all(reply, n);
            freeReplyObject(reply);
            reply = NULL;
        }
        if (pass == 0 && ok) ok = redisReaderFeed(rd, (const char *)data + cut, size - cut) == REDIS_OK;
    }
    redisReaderFree(rd);
    return 0;
}
