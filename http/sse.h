/* http/sse.h - Server-Sent Events: GET /api/v1/jobs/{id}/events and GET /api/v1/events.
 *
 * Each stream has a thread that waits in coord_events_wait (1 s at a time) and appends
 * frames to the stream's buffer; MHD pulls the buffer through a content-reader callback
 * that suspends the connection when it is empty, and the thread resumes it when there is
 * more. So a stream holds no MHD worker thread while it waits, and the short requests
 * keep the whole pool.
 *
 * Frames: "event: <type>\nid: <id>\ndata: <json>\n\n" with type state, plan or metrics,
 * a comment ": keep-alive" after 15 s without one, and "retry: 2000" first. A job
 * stream starts with a "state" frame (the job as it is now, "snapshot": true) and ends
 * after the job reaches a final state and the events before it are out. The id is the
 * position in both Redis streams, "EVENTS_ID,METRICS_ID" (all-jobs stream: "EVENTS_ID"),
 * so a client that reconnects with Last-Event-ID misses nothing the streams still hold.
 *
 * A stream opened with a user's token (not the daemon's, not an anonymous --public-reads
 * reader's) lasts only as long as that token: every SSE_TOKEN_RECHECK_S, and before each
 * batch of events, the stream checks that the user still exists, still has the token it
 * was opened with (a renewal replaces it) and that it has not expired; when not, it sends
 * "event: error" with data {"type": "error", "reason": "user-removed" | "token-replaced" |
 * "token-expired", "detail": ...} (no id: the last event's id stays the one to resume
 * from) and ends.
 */
#ifndef PACER_HTTP_SSE_H
#define PACER_HTTP_SSE_H

#include <stddef.h>

#include "http_internal.h"

#define SSE_HEARTBEAT_S 15.0
#define SSE_WAIT_MS 1000
#define SSE_TOKEN_RECHECK_S 2.0 /* an idle stream re-checks its user's token this often */
#define SSE_BATCH 200
#define SSE_BUFFER_MAX (4 << 20) /* a client this far behind is dropped (it reconnects) */

/* Answers the request with a stream of job's events (job "" = every job's state and plan
 * events), or with a problem: 404 unknown job, 503 too many streams on the server
 * (--sse-max) or Redis down, 429 too many streams from this client address
 * (--sse-per-client). */
enum MHD_Result sse_open(http_req_t *rq, const char *job);

/* Ends every stream and waits for their threads (server stopping). */
void sse_shutdown(http_server_t *srv);

/* ---- pure helpers (unit-tested) ---------------------------------------------------------- */

/* Parses a Last-Event-ID: "E" or "E,M" (stream ids). 0, or -1 when malformed. metrics_id
 * is left empty when absent. */
int sse_id_parse(const char *s, char *events_id, size_t elen, char *metrics_id, size_t mlen);

/* Orders two stream ids ("ms-seq") numerically; malformed ids sort first. */
int sse_stream_id_cmp(const char *a, const char *b);

/* Formats one frame into buf (data's newlines become separate data: lines). Returns the
 * length, or -1 when it does not fit. type and id may be NULL. */
long sse_frame(char *buf, size_t len, const char *type, const char *id, const char *data);

#endif
