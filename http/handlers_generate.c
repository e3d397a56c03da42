/* http/handlers_generate.c - POST /api/v1/jobs/{id}/generate: text from a job's checkpoint
 * (coordinator/textgen.h). Who may: admins on any job, a member on their own jobs, a viewer
 * never (USER_ACT_GENERATE, retry's rule: it spends the cluster's CPU); under the daemon's
 * --viewers-generate every user on any job (http/server.h's viewers_generate).
 *
 * No server thread waits on a generation: the handler starts pacer-generate, suspends the
 * connection and hands the process to a thread of its own (pump), which reads its lines and
 * resumes the connection when there is an answer to give; libmicrohttpd then calls the
 * handler again (http_req's resume), which queues it. The first line decides the status, so
 * that a refusal (a bad checkpoint name: 400; a job with nothing to generate from: 409) is the
 * answer's. Then, with Accept: text/event-stream, each token is an "event: token" frame
 * ({"token", "text"}) as it comes and the summary one "event: done" frame ({"text", "tokens",
 * "prompt_tokens", "tokens_per_s", ...}), relayed by the same thread (the reader suspends the
 * connection while no frame is ready, as http/sse.c's streams); otherwise the thread reads up
 * to the summary and the answer is it as JSON. A failure after the first token is an "event:
 * error" frame ({"error"}) or a 500. While the connection is suspended for its answer the
 * thread also watches the client's socket: a client that goes away has its process killed.
 * At most GENERATE_CONCURRENT_MAX run at once (503 past it): they spend CPU, not threads. */
#include "handlers.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "clog.h"
#include "textgen.h"
#include "http_internal.h"
#include "respond.h"
#include "users.h"

#define GENERATE_CONCURRENT_MAX 4
#define GENERATE_LINE_MAX (1 << 20) /* a summary of 1024 tokens of up to a few hundred bytes each */

static atomic_int running;

/* What the thread has for the suspended request (gen_t's phase). */
enum {
    GEN_STARTING, /* the first line is not in yet */
    GEN_FAILED,   /* the first line was an error (line, status) */
    GEN_STREAM,   /* SSE: the first frame is in out; the thread relays the rest */
    GEN_ANSWER,   /* JSON: the summary (answer), or an error after tokens (line) */
    GEN_GONE,     /* the client went away, or the thread could not start: no answer */
};

typedef struct {
    genproc_t p;
    int sse, client_fd;
    char *line; /* the line being read (the thread's until it resumes the request) */
    size_t len;
    char rbuf[4096]; /* what was read from the process past the line */
    size_t rlen, roff;
    char *frame; /* the frame being sent */
    size_t flen;
    int done, status;
    json_t *answer;
    /* shared with MHD's threads (mu guards them; the protocol of http/sse.c: the reader
     * suspends the connection when nothing is ready, the thread resumes it, neither call
     * under mu) */
    pthread_mutex_t mu;
    int phase, reaping;
    char *out;
    size_t olen, ocap, ooff;
    int eof, suspended, closed, refs;
    struct MHD_Connection *conn;
} gen_t;

/* The threads that still run, for generate_shutdown: each resumes its connection before it
 * ends, and libmicrohttpd must not stop with a connection suspended. */
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t live_cond = PTHREAD_COND_INITIALIZER;
static gen_t *live[GENERATE_CONCURRENT_MAX];
static int nlive, stopping;

/* Kills the process unless it is being reaped (then it has ended its output and exits). */
static void gen_kill(gen_t *s)
{
    pthread_mutex_lock(&s->mu);
    if (!s->reaping && s->p.pid > 0) kill(s->p.pid, SIGKILL);
    pthread_mutex_unlock(&s->mu);
}

/* Closes the process's output and waits for it: its exit status (-1: killed or unknown). */
static int gen_reap(gen_t *s, int ended)
{
    pthread_mutex_lock(&s->mu);
    s->reaping = 1;
    pthread_mutex_unlock(&s->mu);
    const int status = coord_generate_end(&s->p, ended);
    return status;
}

/* The next bytes of the process's output into rbuf: > 0, 0 at its end, -1 when the client
 * went away first (watch: the connection is suspended, its socket is ours to look at). */
static ssize_t fill(gen_t *s, int watch)
{
    for (;;) {
        struct pollfd fds[2] = {{.fd = s->p.fd, .events = POLLIN}, {.fd = s->client_fd, .events = POLLRDHUP}};
        const int n = poll(fds, watch && s->client_fd >= 0 ? 2 : 1, -1);
        if (n < 0 && errno == EINTR) continue;
        /* the client's end first: a process that keeps printing must not hide it */
        if (n > 0 && (fds[1].revents & (POLLRDHUP | POLLHUP | POLLERR))) return -1;
        const ssize_t r = read(s->p.fd, s->rbuf, sizeof s->rbuf);
        if (r < 0 && errno == EINTR) continue;
        s->rlen = r > 0 ? (size_t)r : 0;
        s->roff = 0;
        return r > 0 ? r : 0;
    }
}

/* The next line of the process's output into s->line (NUL-terminated, no newline): 1; 0 at
 * its end (or a line past GENERATE_LINE_MAX); -1 when the client went away (watch). */
static int read_line(gen_t *s, int watch)
{
    s->len = 0;
    for (;;) {
        if (s->roff == s->rlen) {
            const ssize_t n = fill(s, watch);
            if (n <= 0) return n < 0 ? -1 : 0;
        }
        const char ch = s->rbuf[s->roff++];
        if (ch == '\n') break;
        if (s->len + 1 >= GENERATE_LINE_MAX) {
            gen_kill(s); /* no line of its is this long: it is not reading to its end */
            return 0;
        }
        s->line[s->len++] = ch;
    }
    s->line[s->len] = '\0';
    return 1;
}

static void gen_free(gen_t *s)
{
    if (s->p.pid > 0 || s->p.fd >= 0) coord_generate_end(&s->p, s->done);
    json_decref(s->answer);
    free(s->line);
    free(s->frame);
    free(s->out);
    pthread_mutex_destroy(&s->mu);
    free(s);
    atomic_fetch_sub(&running, 1);
}

/* One reference less (the thread's, the request's or the stream response's): the last
 * frees it and reaps the process (killing it if it still runs: nobody reads it). */
static void gen_release(gen_t *s)
{
    pthread_mutex_lock(&s->mu);
    const int left = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (left == 0) gen_free(s);
}

/* The current line as one SSE frame into s->frame. */
static int make_frame(gen_t *s)
{
    json_t *o = json_loads(s->line, 0, NULL);
    const char *type = json_object_get(o, "error") ? "error" : json_object_get(o, "done") ? "done" : "token";
    json_decref(o);
    free(s->frame);
    s->frame = malloc(s->len + 64);
    if (!s->frame) return -1;
    s->flen = (size_t)snprintf(s->frame, s->len + 64, "event: %s\ndata: %s\n\n", type, s->line);
    if (strcmp(type, "token") != 0) s->done = 1;
    return 0;
}

/* Appends s->frame to what the client is sent: 0, or -1 out of memory. */
static int push_frame(gen_t *s)
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

/* Gives the suspended request its answer (phase) and wakes it. */
static void hand_over(gen_t *s, int phase)
{
    pthread_mutex_lock(&s->mu);
    s->phase = phase;
    pthread_mutex_unlock(&s->mu);
    MHD_resume_connection(s->conn);
}

/* SSE after the first frame: each line as a frame, until done or error. The client's end is
 * MHD's to notice now (sse_free kills the process). */
static void relay(gen_t *s)
{
    while (!s->done) {
        if (read_line(s, 0) != 1) {
            snprintf(s->line, GENERATE_LINE_MAX, "{\"error\":\"generation stopped before its end\"}");
            s->len = strlen(s->line);
        }
        if (make_frame(s) != 0 || push_frame(s) != 0) break;
    }
}

/* JSON mode: the lines up to the summary (or an error), watching the client. 1 with the
 * last line read, or -1 when the client went away. */
static int read_to_summary(gen_t *s)
{
    for (;;) {
        json_t *o = json_loads(s->line, 0, NULL);
        const int last = json_object_get(o, "done") || json_object_get(o, "error");
        if (json_object_get(o, "done")) {
            json_object_del(o, "done");
            s->answer = o;
        } else json_decref(o);
        if (last) return 1;
        const int r = read_line(s, 1);
        if (r < 0) return -1;
        if (r == 0) {
            s->line[0] = '\0';
            return 1;
        }
    }
}

static void live_remove(gen_t *s)
{
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < nlive; i++)
        if (live[i] == s) live[i] = live[--nlive];
    pthread_cond_broadcast(&live_cond);
    pthread_mutex_unlock(&live_mu);
}

static void *pump(void *arg)
{
    gen_t *s = arg;
    int r = read_line(s, 1), phase = GEN_GONE;
    if (r == 0) s->line[0] = '\0';
    if (r >= 0) {
        json_t *first = json_loads(s->line, 0, NULL);
        const int failed = !json_is_object(first) || json_object_get(first, "error");
        json_decref(first);
        if (failed) {
            s->status = gen_reap(s, 1);
            phase = GEN_FAILED;
        } else if (s->sse) {
            phase = make_frame(s) == 0 && push_frame(s) == 0 ? GEN_STREAM : GEN_GONE;
        } else if (read_to_summary(s) > 0) {
            if (s->answer) s->done = 1;
            s->status = gen_reap(s, 1);
            phase = GEN_ANSWER;
        }
    }
    if (phase == GEN_GONE) gen_kill(s);
    hand_over(s, phase);
    if (phase == GEN_STREAM) relay(s);
    live_remove(s);
    gen_release(s);
    return NULL;
}

void generate_shutdown(void)
{
    pthread_mutex_lock(&live_mu);
    stopping = 1;
    for (int i = 0; i < nlive; i++) gen_kill(live[i]);
    struct timespec deadline;
    clock_wall_deadline(10.0, &deadline);
    while (nlive > 0)
        if (pthread_cond_timedwait(&live_cond, &live_mu, &deadline) == ETIMEDOUT) break;
    const int left = nlive;
    pthread_mutex_unlock(&live_mu);
    if (left > 0) clog_printf("http: %d generations did not end at shutdown", left);
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    gen_t *s = cls;
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

/* MHD is done with the stream (sent, or the client went away): a process still running is
 * killed, which ends the thread's read. */
static void sse_free(void *cls)
{
    gen_t *s = cls;
    pthread_mutex_lock(&s->mu);
    s->closed = 1;
    s->suspended = 0;
    const int running_still = !s->eof;
    pthread_mutex_unlock(&s->mu);
    if (running_still) gen_kill(s);
    gen_release(s);
}

static int wants_sse(http_req_t *rq)
{
    const char *a = MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, "Accept");
    return a && strstr(a, "text/event-stream") != NULL;
}

/* The first line (or the line that ended a JSON answer) was an error: the process's exit
 * status names whose fault. */
static int answer_error(http_req_t *rq, gen_t *s)
{
    json_t *o = json_loads(s->line, 0, NULL);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s",
             json_string_value(json_object_get(o, "error")) ? json_string_value(json_object_get(o, "error"))
                                                            : "generation failed before its first token");
    json_decref(o);
    if (s->status == GENERATE_EXIT_BAD) return handler_bad_parameter(rq, msg);
    if (s->status == GENERATE_EXIT_CONFLICT)
        return handler_problem(rq, problem_new(409, "nothing-to-generate-from", "Nothing to generate from", msg, NULL,
                                               NULL));
    return handler_problem(rq, problem_new(500, "generation-failed", "Generation failed", msg, NULL, NULL));
}

static int answer_sse(http_req_t *rq, gen_t *s)
{
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader, s, sse_free);
    if (!resp) return MHD_NO;
    pthread_mutex_lock(&s->mu);
    s->refs++; /* the response's, released by sse_free */
    pthread_mutex_unlock(&s->mu);
    respond_common_headers(resp);
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    const enum MHD_Result ret = MHD_queue_response(rq->conn, MHD_HTTP_OK, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* The request again, once the thread resumed it: its answer. */
static int generate_resumed(http_req_t *rq)
{
    gen_t *s = rq->resume_ctx;
    pthread_mutex_lock(&s->mu);
    const int phase = s->phase;
    pthread_mutex_unlock(&s->mu);
    rq->resume = NULL; /* answered now, whatever comes */
    switch (phase) {
    case GEN_FAILED: return answer_error(rq, s);
    case GEN_STREAM: return answer_sse(rq, s);
    case GEN_ANSWER:
        if (!s->answer) return answer_error(rq, s);
        json_t *o = s->answer;
        s->answer = NULL;
        return respond_json(rq->conn, MHD_HTTP_OK, o, NULL, 0);
    default: return MHD_NO; /* the client is gone: close */
    }
}

/* The request is over (answered, or its connection closed): its reference. */
static void generate_request_done(http_req_t *rq)
{
    gen_t *s = rq->resume_ctx;
    rq->resume_ctx = NULL;
    if (!s) return;
    pthread_mutex_lock(&s->mu);
    const int streaming = s->phase == GEN_STREAM;
    pthread_mutex_unlock(&s->mu);
    if (!streaming) gen_kill(s);
    gen_release(s);
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
        return handler_problem(rq, problem_new(409, "imported-model", "Generation needs a language model", err, NULL,
                                               NULL));
    return handler_coord_error(rq, code, err);
}

/* Suspends the request and starts the thread that answers it (in this order: the thread's
 * resume must find the connection suspended). */
static int hand_to_thread(http_req_t *rq, gen_t *s)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(rq->conn, MHD_CONNECTION_INFO_CONNECTION_FD);
    s->client_fd = ci ? ci->connect_fd : -1;
    s->conn = rq->conn;
    s->refs = 2; /* the thread's and the request's */
    pthread_mutex_lock(&live_mu);
    const int refused = stopping;
    if (!refused) live[nlive++] = s;
    pthread_mutex_unlock(&live_mu);
    if (refused) { /* the server stops: no connection may be suspended from now on */
        gen_free(s);
        return handler_problem(rq, problem_new(503, "generation-busy", "Too many generations",
                                               "the coordinator is stopping", NULL, NULL));
    }
    rq->resume = generate_resumed;
    rq->resume_done = generate_request_done;
    rq->resume_ctx = s;
    MHD_suspend_connection(rq->conn);
    pthread_t th;
    if (pthread_create(&th, NULL, pump, s) != 0) {
        live_remove(s);
        gen_kill(s);
        s->refs = 1;
        hand_over(s, GEN_GONE);
        return MHD_YES;
    }
    pthread_detach(th);
    return MHD_YES;
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
    gen_t *s = calloc(1, sizeof *s);
    if (s) s->p = (genproc_t){.pid = -1, .fd = -1};
    if (!s || !(s->line = malloc(GENERATE_LINE_MAX)) || pthread_mutex_init(&s->mu, NULL) != 0) {
        genreq_free(&r);
        if (s) free(s->line), free(s);
        atomic_fetch_sub(&running, 1);
        return handler_coord_error(rq, COORD_EINTERNAL, "out of memory");
    }
    const int code = coord_generate_start(rq->srv->coord, id, &r, &s->p, err, sizeof err);
    genreq_free(&r);
    if (code != COORD_OK) {
        gen_free(s);
        return start_failed(rq, code, err);
    }
    clog_printf("http: job %s generates", id);
    s->sse = wants_sse(rq);
    return hand_to_thread(rq, s);
}
