/* http/query.c - see query.h. */
#include "query.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *const QUERY_STATES[] = {"QUEUED", "RUNNING", "RESTARTING", "SUCCEEDED", "FAILED", "CANCELLED", NULL};

void query_init(query_t *q) { q->n = 0; }

int query_add(query_t *q, const char *key, const char *value)
{
    if (!key || q->n >= QUERY_MAX) return -1;
    q->kv[q->n].key = key;
    q->kv[q->n].value = value ? value : "";
    q->n++;
    return 0;
}

const char *query_get(const query_t *q, const char *key)
{
    for (int i = 0; i < q->n; i++)
        if (strcmp(q->kv[i].key, key) == 0) return q->kv[i].value;
    return NULL;
}

int query_long(const query_t *q, const char *key, long lo, long hi, int clamp_high, long *out, char *err, size_t errlen)
{
    const char *v = query_get(q, key);
    if (!v) return 0;
    /* Digits only (one leading '-'): strtol alone would accept " 12", "+12" and "12abc". */
    const char *p = v + (*v == '-');
    int digits = 0;
    while (isdigit((unsigned char)*p)) p++, digits++;
    long x = 0;
    int bad = *p != 0 || digits == 0 || digits > 18;
    if (!bad) {
        errno = 0;
        x = strtol(v, NULL, 10);
        bad = errno != 0;
    }
    if (!bad && x > hi && clamp_high) x = hi;
    if (bad || x < lo || x > hi) {
        if (clamp_high || hi == LONG_MAX) snprintf(err, errlen, "%s: must be an integer >= %ld", key, lo);
        else snprintf(err, errlen, "%s: must be an integer between %ld and %ld", key, lo, hi);
        return -1;
    }
    *out = x;
    return 1;
}

int query_state(const query_t *q, const char *key, const char **out, char *err, size_t errlen)
{
    const char *v = query_get(q, key);
    if (!v) return 0;
    if (!*v) return 0; /* "?state=" means any state, as in coord_list */
    for (const char *const *s = QUERY_STATES; *s; s++)
        if (strcasecmp(v, *s) == 0) {
            *out = *s;
            return 1;
        }
    snprintf(err, errlen, "%s: must be one of QUEUED, RUNNING, RESTARTING, SUCCEEDED, FAILED, CANCELLED", key);
    return -1;
}
