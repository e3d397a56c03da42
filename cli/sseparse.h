/* cli/sseparse.h - an incremental parser of a text/event-stream (Server-Sent Events, the
 * WHATWG rules): bytes go in as they arrive, whole events come out through a callback.
 *
 * "event:", "data:" (several lines are joined with '\n'), "id:" and "retry:" fields;
 * comments (":") and unknown fields are ignored; lines end in LF, CRLF or CR (a CR at the
 * end of one chunk and an LF at the start of the next are one line end); a blank line
 * dispatches the event (none when it has no data). The last id is kept across events,
 * for Last-Event-ID, and taken over only at a blank line, so an event cut off by a
 * dropped connection is asked for again. An event larger than SSE_EVENT_MAX is an error, not a growing
 * buffer. Pure.
 */
#ifndef PACER_CLI_SSEPARSE_H
#define PACER_CLI_SSEPARSE_H

#include <stddef.h>

#define SSE_EVENT_MAX (1u << 20)
#define SSE_ID_MAX 128

/* type: "message" when the event named none. Returns 0 to go on, a positive value to
 * stop (sse_feed then returns that value). */
typedef int (*sse_event_fn)(void *ctx, const char *type, const char *id, const char *data);

typedef struct {
    sse_event_fn fn;
    void *ctx;
    char *line; /* the line being read */
    size_t line_len, line_cap;
    char *data; /* the event's data so far */
    size_t data_len, data_cap;
    int has_data;
    char type[64];
    char id_buf[SSE_ID_MAX];  /* the last "id:" read */
    char last_id[SSE_ID_MAX]; /* id_buf as of the last blank line: what a reconnect sends */
    long retry_ms;            /* the server's retry: advice; 0 = none */
    int after_cr;             /* the previous byte was a CR */
    size_t bytes;             /* total fed */
} sse_parser_t;

void sse_init(sse_parser_t *p, sse_event_fn fn, void *ctx);
/* Returns 0, the callback's positive value, or -1 (an event or line over SSE_EVENT_MAX,
 * or out of memory). */
int sse_feed(sse_parser_t *p, const char *buf, size_t len);
void sse_free(sse_parser_t *p);

#endif
