/* http/query.h - the query parameters of a request, checked one at a time.
 *
 * libmicrohttpd splits and percent-decodes the query string; query_add collects the
 * pairs (pointers into the connection's memory, valid for the request) and the typed
 * getters validate them. A getter returns 0 when the parameter is absent (*out keeps
 * its default), 1 when it is present and valid, -1 when it is present and invalid, with
 * one line in err that starts with the parameter name ("limit: must be an integer >= 1").
 * Unknown parameters are ignored (cache busters, the dashboard's access_token). Pure.
 */
#ifndef PACER_HTTP_QUERY_H
#define PACER_HTTP_QUERY_H

#include <stddef.h>

#define QUERY_MAX 16

typedef struct {
    int n;
    struct {
        const char *key;
        const char *value; /* "" for "?key" without '=' */
    } kv[QUERY_MAX];
} query_t;

void query_init(query_t *q);

/* Adds a pair; beyond QUERY_MAX pairs the rest are dropped (returns -1). */
int query_add(query_t *q, const char *key, const char *value);

/* The first value of key, or NULL. */
const char *query_get(const query_t *q, const char *key);

/* A decimal integer in [lo, hi]. Above hi: clamped to hi when clamp_high, else invalid. */
int query_long(const query_t *q, const char *key, long lo, long hi, int clamp_high, long *out, char *err, size_t errlen);

/* A job state name (QUEUED, RUNNING, ...; case-insensitive); *out is the canonical name. */
int query_state(const query_t *q, const char *key, const char **out, char *err, size_t errlen);

/* The job states, in the order the API documents them; NULL-terminated. */
extern const char *const QUERY_STATES[];

#endif
