/* http/handlers_generate.c - POST /api/v1/jobs/{id}/generate: text from a job's checkpoint
 * (coordinator/textgen.h). Who may: admins on any job, a member on their own jobs, a viewer
 * never (USER_ACT_GENERATE, retry's rule: it spends the cluster's CPU); under the daemon's
 * --viewers-generate every user on any job (http/server.h's viewers_generate).
 *
 * The handler starts pacer-generate and reads its first line before answering, so that a
 * refusal (a bad checkpoint name: 400; a job with nothing to generate from: 409) is the
 * answer's status. Then, with Accept: text/event-stream, each token is an "event: token"
 * frame ({"token", "text"}) as it comes and the summary one "event: done" frame
 * ({"text", "tokens", "prompt_tokens", "tokens_per_s", ...}); otherwise the answer waits
 * for the summary and is it as JSON. A failure after the first token is an "event: error"
 * frame ({"error"}) or a 500. A stream's frames are relayed by a thread of its own, the
 * connection suspended while none is ready (as http/sse.c's streams); the first line, and a
 * JSON answer's whole run, are waited for on the server thread (at most
 * GENERATE_CONCURRENT_MAX run at once, 503 past it), which serves no other connection
 * meanwhile. */
#include "handlers.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "clog.h"
#include "textgen.h"
#include "http_internal.h"
#include "respond.h"
#include "users.h"

#define GENERATE_CONCURRENT_MAX 4
#define GENERATE_LINE_MAX (1 << 20) /* a summary of 1024 tokens of up to a few hundred bytes each */

static atomic_int running;

typedef struct {
    genproc_t p;
    char *line; /* the line being read */
    size_t len;
    char *frame; /* the frame being sent */
    size_t flen, fsent;
    int done;
    /* the stream's frames, appended by its thread and sent by MHD's reader (mu guards them
     * and the flags; the protocol of http/sse.c: the reader suspends the connection when
     * nothing is ready, the thread resumes it, neither call under mu) */
    pthread_mutex_t mu;
    char *out;
    size_t olen, ocap, ooff;
    int eof, suspended, closed, refs;
    struct MHD_Connection *conn;
} genstream_t;

/* The next line of the process's output into s->line (NUL-terminated, no newline): 1, or 0
 * at its end (or a line past GENERATE_LINE_MAX). */
static int read_line(genstream_t *s)
{
    s->len = 0;
    for (;;) {
        char ch;
        const ssize_t n = read(s->p.fd, &ch, 1);
        if (n <= 0 || s->len + 1 >= GENERATE_LINE_MAX) return 0;
        if (ch == '\n') break;
        s->line[s->len++] = ch;
    }
    s->line[s->len] = '\0';
    return 1;
}

static void stream_free(genstream_t *s)
{
    if (!s) return;
    if (s->p.pid > 0 || s->p.fd >= 0) coord_generate_end(&s->p, s->done);
    free(s->line);
    free(s->frame);
    free(s);
    atomic_fetch_sub(&running, 1);
}

/* The current line as one SSE frame into s->frame. */
static int make_frame(genstream_t *s)
{
    json_t *o = json_loads(s->line, 0, NULL);
    const char *type = json_object_get(o, "error") ? "error" : json_object_get(o, "done") ? "done" : "token";
    json_decref(o);
    free(s->frame);
    s->frame = malloc(s->len + 64);
    if (!s->frame) return -1;
    s->flen = (size_t)snprintf(s->frame, s->len + 64, "event: %s\ndata: %s\n\n", type, s->line);
    s->fsent = 0;
    if (strcmp(type, "token") != 0) s->done = 1;
    return 0;
}

/* One reference less (the thread's or MHD's): the last frees the stream and reaps the
 * process. */
static void stream_release(genstream_t *s)
{
    pthread_mutex_lock(&s->mu);
    const int left = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (left > 0) return;
    pthread_mutex_destroy(&s->mu);
    free(s->out);
    s->done = 1; /* its output was read to the end, or it was killed: waited for */
    stream_free(s);
}

/* Appends s->frame to what the client is sent: 0, or -1 out of memory. */
static int push_frame(genstream_t *s)
{
    pthread_mutex_lock(&s->mu);
    int rc = 0;
    if (s->olen + s->flen > s->ocap) {
        const size_t cap = (s->olen + s->flen) * 2 + 4096;
        char *b = realloc(s->out, cap);
        if (b) s->out = b, s->ocap = cap;
        else rc = -1;
    }
    if (rc == 0) memcpy(s->out + s->olen, s->frame, s->flen), s->olen += s->flen;
    if (rc != 0 || s->done) s->eof = 1;
    const int wake = s->suspended && !s->closed;
    if (wake) s->suspended = 0;
    struct MHD_Connection *conn = s->conn;
    pthread_mutex_unlock(&s->mu);
    if (wake) MHD_resume_connection(conn);
    return rc;
}

/* The thread of a stream: each line of the process as a frame, until done or error. */
static void *pump(void *arg)
{
    genstream_t *s = arg;
    while (!s->done) {
        if (!read_line(s)) {
            snprintf(s->line, GENERATE_LINE_MAX, "{\"error\":\"generation stopped before its end\"}");
            s->len = strlen(s->line);
        }
        if (make_frame(s) != 0 || push_frame(s) != 0) break;
    }
    stream_release(s);
    return NULL;
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    genstream_t *s = cls;
    (void)pos;
    pthread_mutex_lock(&s->mu);
    if (s->ooff < s->olen) {
        const size_t n = s->olen - s->ooff < max ? s->olen - s->ooff : max;
        memcpy(buf, s->out + s->ooff, n);
        s->ooff += n;
        if (s->ooff == s->olen) s->ooff = s->olen = 0;
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->eof) {
        pthread_mutex_unlock(&s->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    s->suspended = 1;
    pthread_mutex_unlock(&s->mu);
    MHD_suspend_connection(s->conn);
    return 0;
}

/* MHD is done with the response (sent, or the client went away): a process still running
 * is killed, which ends the thread's read. */
static void sse_free(void *cls)
{
    genstream_t *s = cls;
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    s->suspended = 0;
    const int running_still = !s->eof;
    pthread_mutex_unlock(&s->mu);
    if (running_still && s->p.pid > 0) kill(s->p.pid, SIGKILL);
    stream_release(s);
}

static int wants_sse(http_req_t *rq)
{
    const char *a = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept");
    return a && strstr(a, "text/event-stream") != NULL;
}

/* The first line was an error: the process's exit status names whose fault. */
static int answer_error(http_req_t *rq, genstream_t *s)
{
    json_t *o = json_loads(s->line, 0, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s",
             json_string_value(json_object_get(o, "error")) ? json_string_value(json_object_get(o, "error"))
                                                            : "generation failed before its first token");
    json_decref(o);
    const int status = coord_generate_end(&s->p, 1);
    stream_free(s);
    if (status == GENERATE_EXIT_BAD) return handler_bad_parameter(rq, msg);
    if (status == GENERATE_EXIT_CONFLICT)
        return handler_problem(rq, problem_new(409, "nothing-to-generate-from", "Nothing to generate from", msg, NULL,
                                               NULL));
    return handler_problem(rq, problem_new(500, "generation-failed", "Generation failed", msg, NULL, NULL));
}

/* JSON mode: the lines up to the summary, which is the answer. */
static int answer_json(http_req_t *rq, genstream_t *s)
{
    json_t *o = NULL;
    for (;;) {
        o = json_loads(s->line, 0, NULL);
        if (json_object_get(o, "done") || json_object_get(o, "error") || !read_line(s)) break;
        json_decref(o);
        o = NULL;
    }
    if (!json_object_get(o, "done")) {
        json_decref(o);
        return answer_error(rq, s);
    }
    json_object_del(o, "done");
    s->done = 1;
    stream_free(s);
    return respond_json(rq->conn, MHD_HTTP_OK, o, NULL, 0);
}

/* The first line is in s->line: a thread relays the rest, so that no server thread waits on
 * the process while it computes. */
static int answer_sse(http_req_t *rq, genstream_t *s)
{
    s->conn = rq->conn;
    s->refs = 2; /* the thread's and MHD's */
    pthread_t th;
    if (pthread_mutex_init(&s->mu, NULL) != 0 || make_frame(s) != 0 || push_frame(s) != 0) {
        stream_free(s);
        return handler_coord_error(rq, COORD_EINTERNAL, "out of memory");
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, s, sse_free);
    if (!resp) {
        stream_free(s);
        return MHD_NO;
    }
    if (pthread_create(&th, NULL, pump, s) != 0) {
        s->refs = 1; /* MHD's alone: the stream ends after the first frame */
        s->eof = 1;
    } else pthread_detach(th);
    respond_common_headers(resp);
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    const enum MHD_Result ret = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* 0 when the job exists and the caller may generate from it; else 1 with the answer in *ret. */
static int generate_refused(http_req_t *rq, const char *id, int *ret)
{
    char owner[USER_OWNER_MAX + 1] = "", err[160];
    int exists = 0;
    const int code = coord_job_owner(rq->srv->coord, id, owner, sizeof owner, &exists);
    if (code != COORD_OK) {
        *ret = handler_coord_error(rq, code, NULL);
        return 1;
    }
    if (!exists) {
        snprintf(err, sizeof err, "no job %.60s", id);
        *ret = handler_coord_error(rq, COORD_ENOTFOUND, err);
        return 1;
    }
    return rq->role != USER_ADMIN && !rq->srv->viewers_generate &&
           handler_refused(rq, USER_ACT_GENERATE, "job", id, 1, owner, ret);
}

/* The process could not start: why, as the caller's answer. */
static int start_failed(http_req_t *rq, int code, const char *err)
{
    if (code == COORD_ESTATE)
        return handler_problem(rq, problem_new(409, "nothing-to-generate-from", "Nothing to generate from", err, NULL,
                                               NULL));
    if (code == COORD_GENERATE_IMPORTED)
        return handler_problem(rq, problem_new(409, "imported-model", "Generation needs a built-in GPT", err, NULL,
                                               NULL));
    return handler_coord_error(rq, code, err);
}

int handle_job_generate(http_req_t *rq)
{
    const char *id = rq->match.params[0];
    int ret;
    char err[1024];
    if (generate_refused(rq, id, &ret)) return ret;
    genreq_t r;
    if (genreq_parse(rq->body, rq->body_len, &r, err, sizeof err) != 0) return handler_bad_parameter(rq, err);
    if (atomic_fetch_add(&running, 1) >= GENERATE_CONCURRENT_MAX) {
        atomic_fetch_sub(&running, 1);
        genreq_free(&r);
        snprintf(err, sizeof err, "%d generations are running: try again when one has ended", GENERATE_CONCURRENT_MAX);
        return handler_problem(rq, problem_new(503, "generation-busy", "Too many generations", err, NULL, NULL));
    }
    genstream_t *s = calloc(1, sizeof *s);
    if (s) s->p = (genproc_t){.pid = -1, .fd = -1};
    if (!s || !(s->line = malloc(GENERATE_LINE_MAX))) {
        genreq_free(&r);
        if (s) stream_free(s);
        else atomic_fetch_sub(&running, 1);
        return handler_coord_error(rq, COORD_EINTERNAL, "out of memory");
    }
    const int code = coord_generate_start(rq->srv->coord, id, &r, &s->p, err, sizeof err);
    genreq_free(&r);
    if (code != COORD_OK) {
        stream_free(s);
        return start_failed(rq, code, err);
    }
    clog_printf("http: job %s generates", id);
    if (!read_line(s)) s->line[0] = '\0';
    json_t *first = json_loads(s->line, 0, NULL);
    const int failed = !json_is_object(first) || json_object_get(first, "error");
    json_decref(first);
    if (failed) return answer_error(rq, s);
    return wants_sse(rq) ? answer_sse(rq, s) : answer_json(rq, s);
}
