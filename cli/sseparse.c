/* cli/sseparse.c - see sseparse.h. */
#include "sseparse.h"

#include <stdlib.h>
#include <string.h>

void sse_init(sse_parser_t *p, sse_event_fn fn, void *ctx)
{
    memset(p, 0, sizeof *p);
    p->fn = fn;
    p->ctx = ctx;
}

void sse_free(sse_parser_t *p)
{
    free(p->line);
    free(p->data);
    p->line = p->data = NULL;
    p->line_len = p->line_cap = p->data_len = p->data_cap = 0;
}

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return 0;
    if (need > SSE_EVENT_MAX + 1) return -1;
    size_t c = *cap ? *cap : 256;
    while (c < need) c *= 2;
    if (c > SSE_EVENT_MAX + 1) c = SSE_EVENT_MAX + 1;
    char *b = realloc(*buf, c);
    if (!b) return -1;
    *buf = b;
    *cap = c;
    return 0;
}

static int dispatch(sse_parser_t *p)
{
    memcpy(p->last_id, p->id_buf, sizeof p->last_id);
    int rc = 0;
    if (p->has_data) {
        p->data[p->data_len] = 0;
        rc = p->fn(p->ctx, p->type[0] ? p->type : "message", p->last_id, p->data);
    }
    p->has_data = 0;
    p->data_len = 0;
    p->type[0] = 0;
    return rc;
}

/* One complete line (without its end), NUL-terminated in p->line. */
static int line(sse_parser_t *p)
{
    char *l = p->line;
    size_t n = p->line_len;
    l[n] = 0;
    if (n == 0) return dispatch(p);
    if (l[0] == ':') return 0; /* comment (keep-alive) */
    char *colon = memchr(l, ':', n);
    const char *value = "";
    size_t vlen = 0;
    if (colon) {
        *colon = 0;
        value = colon + 1;
        if (*value == ' ') value++;
        vlen = n - (size_t)(value - l);
    }
    if (strcmp(l, "data") == 0) {
        size_t need = p->data_len + (p->has_data ? 1 : 0) + vlen + 1;
        if (need > SSE_EVENT_MAX || grow(&p->data, &p->data_cap, need) != 0) return -1;
        if (p->has_data) p->data[p->data_len++] = '\n';
        memcpy(p->data + p->data_len, value, vlen);
        p->data_len += vlen;
        p->has_data = 1;
    } else if (strcmp(l, "event") == 0) {
        size_t k = vlen < sizeof p->type - 1 ? vlen : sizeof p->type - 1;
        memcpy(p->type, value, k);
        p->type[k] = 0;
    } else if (strcmp(l, "id") == 0) {
        if (vlen < sizeof p->id_buf && !memchr(value, 0, vlen)) {
            memcpy(p->id_buf, value, vlen);
            p->id_buf[vlen] = 0;
        }
    } else if (strcmp(l, "retry") == 0) {
        long ms = 0;
        size_t i = 0;
        for (; i < vlen && value[i] >= '0' && value[i] <= '9' && ms < 100000000; i++) ms = ms * 10 + (value[i] - '0');
        if (i == vlen && vlen > 0) p->retry_ms = ms;
    }
    return 0;
}

int sse_feed(sse_parser_t *p, const char *buf, size_t len)
{
    size_t i = 0;
    for (; i < len; i++) {
        char ch = buf[i];
        p->bytes++;
        if (ch == '\n' && p->after_cr) { /* the LF of a CRLF */
            p->after_cr = 0;
            continue;
        }
        p->after_cr = ch == '\r';
        if (ch == '\n' || ch == '\r') {
            if (grow(&p->line, &p->line_cap, p->line_len + 1) != 0) return -1;
            int rc = line(p);
            p->line_len = 0;
            if (rc) return rc;
            continue;
        }
        if (p->line_len + 2 > SSE_EVENT_MAX || grow(&p->line, &p->line_cap, p->line_len + 2) != 0) return -1;
        p->line[p->line_len++] = ch;
    }
    return 0;
}
