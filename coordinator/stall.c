/* coordinator/stall.c - see stall.h. */
#include "stall.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int is_silent(const stall_rank_t *r, double now)
{
    return !r->waiting[0] && now - r->heartbeat > STALL_SILENT_S;
}

void stall_assess(const stall_rank_t *ranks, int n, double now, stall_verdict_t *v)
{
    memset(v, 0, sizeof *v);
    for (int i = 0; i < n; i++) {
        if (ranks[i].waiting[0]) v->waiting++;
        else if (is_silent(&ranks[i], now)) v->silent++;
    }
    v->stalled = n > 0 && v->waiting > 0 && v->waiting + v->silent == n;
}

static json_t *host_or_null(const char *h) { return h[0] ? json_string(h) : json_null(); }

json_t *stall_json(const stall_rank_t *ranks, int n, double now, double since)
{
    json_t *w = json_array(), *s = json_array();
    for (int i = 0; w && s && i < n; i++) {
        const stall_rank_t *r = &ranks[i];
        if (r->waiting[0])
            json_array_append_new(w, json_pack("{s:i, s:o, s:s, s:o, s:f}", "rank", r->rank, "host",
                                               host_or_null(r->host), "op", r->waiting, "peer",
                                               r->peer >= 0 ? json_integer(r->peer) : json_null(), "since",
                                               r->waiting_since));
        else if (is_silent(r, now))
            json_array_append_new(s, json_pack("{s:i, s:o, s:f}", "rank", r->rank, "host", host_or_null(r->host),
                                               "heartbeat", r->heartbeat));
    }
    if (!w || !s || json_array_size(w) == 0) {
        json_decref(w);
        json_decref(s);
        return NULL;
    }
    return json_pack("{s:f, s:o, s:o}", "since", since, "waiting", w, "silent", s);
}

void stall_signature(const stall_rank_t *ranks, int n, double now, char *out, size_t len)
{
    size_t o = 0;
    if (len) out[0] = 0;
    for (int i = 0; i < n && o < len; i++) {
        const stall_rank_t *r = &ranks[i];
        int k = 0;
        if (r->waiting[0]) k = snprintf(out + o, len - o, "w%d:%s:%d;", r->rank, r->waiting, r->peer);
        else if (is_silent(r, now)) k = snprintf(out + o, len - o, "s%d;", r->rank);
        if (k < 0) break;
        o += (size_t)k;
    }
}

/* Appends to out at *o, bounded. */
static void put(char *out, size_t len, size_t *o, const char *fmt, const char *a, long b)
{
    if (*o >= len) return;
    int k = a ? snprintf(out + *o, len - *o, fmt, a) : snprintf(out + *o, len - *o, fmt, b);
    if (k > 0) *o += (size_t)k;
    if (*o >= len) *o = len - 1;
}

/* "ranks 0, 1" or "rank 2" of the ranks of arr whose key matches (op and peer, for the
 * waiting; all for the silent), and the group's oldest time field. */
static void group(const json_t *arr, size_t first, const char *timekey, char *out, size_t len, size_t *o,
                  double *oldest, int *used)
{
    const json_t *f = json_array_get(arr, first);
    const char *op = json_string_value(json_object_get(f, "op"));
    const json_t *peer = json_object_get(f, "peer");
    size_t count = 0, i;
    const json_t *e;
    json_array_foreach(arr, i, e)
    {
        if (i < first || used[i]) continue;
        if (op && (!json_equal(json_object_get(e, "op"), json_object_get(f, "op")) ||
                   !json_equal(json_object_get(e, "peer"), peer)))
            continue;
        count++;
    }
    put(out, len, o, "%s", count == 1 ? "rank " : "ranks ", 0);
    size_t k = 0;
    json_array_foreach(arr, i, e)
    {
        if (i < first || used[i]) continue;
        if (op && (!json_equal(json_object_get(e, "op"), json_object_get(f, "op")) ||
                   !json_equal(json_object_get(e, "peer"), peer)))
            continue;
        used[i] = 1;
        double t = json_number_value(json_object_get(e, timekey));
        if (t > 0 && (*oldest <= 0 || t < *oldest)) *oldest = t;
        put(out, len, o, "%s", k++ ? ", " : "", 0);
        put(out, len, o, "%ld", NULL, (long)json_integer_value(json_object_get(e, "rank")));
        /* A silent rank's host is what the reader needs: where to look. */
        const char *h = json_string_value(json_object_get(e, "host"));
        if (!op && h) put(out, len, o, " (%s)", h, 0);
    }
}

void stall_text(const json_t *stall, double now, char *out, size_t len)
{
    size_t o = 0;
    if (!len) return;
    out[0] = 0;
    const json_t *w = json_object_get(stall, "waiting"), *s = json_object_get(stall, "silent");
    if (!json_is_array(w) || json_array_size(w) == 0 || json_array_size(w) > 4096 || json_array_size(s) > 4096) return;
    int used[4096] = {0};
    for (size_t i = 0; i < json_array_size(w); i++) {
        if (used[i]) continue;
        const json_t *f = json_array_get(w, i);
        const char *op = json_string_value(json_object_get(f, "op"));
        if (!op) return;
        double oldest = 0;
        put(out, len, &o, "%s", o ? "; " : "", 0);
        group(w, i, "since", out, len, &o, &oldest, used);
        put(out, len, &o, " waiting in %s", op, 0);
        const json_t *peer = json_object_get(f, "peer");
        if (json_is_integer(peer)) put(out, len, &o, " on rank %ld", NULL, (long)json_integer_value(peer));
        if (oldest > 0) put(out, len, &o, " for %ld s", NULL, lround(now - oldest > 0 ? now - oldest : 0));
    }
    memset(used, 0, sizeof used);
    if (json_is_array(s) && json_array_size(s) > 0) {
        double oldest = 0;
        put(out, len, &o, "%s", "; ", 0);
        group(s, 0, "heartbeat", out, len, &o, &oldest, used);
        if (oldest > 0) put(out, len, &o, " silent for %ld s", NULL, lround(now - oldest > 0 ? now - oldest : 0));
        else put(out, len, &o, "%s", " silent", 0);
    }
}
