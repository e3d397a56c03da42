/* cli/watch.c - `pacer watch ID` (and submit/retry --watch): the job's event stream
 * (Server-Sent Events) drawn as one line per rank (progress.h). Not on a terminal (a pipe,
 * a file) it is a log: a line per rank per epoch, and with --every SECONDS its step
 * records too, at most one per rank per SECONDS (progress_print_due); a job's few
 * thousand step records would otherwise be a few thousand lines.
 *
 * It starts from the job and its nodes (so ranks that reported before the watch show at
 * once), then follows GET /api/v1/jobs/{id}/events. The server ends the stream once the
 * job has ended and its last events are out; a stream that ends or breaks before that
 * (a coordinator restart, a network blip) is opened again with Last-Event-ID, so nothing
 * is missed or shown twice; only a coordinator that stays unreachable for about a minute
 * ends the watch (exit 3). The exit status is the job's final state (fmt_state_exit).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "calls.h"
#include "commands.h"
#include "format.h"
#include "progress.h"

#define RECONNECT_TRIES 30 /* consecutive failures, about 2 s apart */
#define DRAW_EVERY_S 0.2

typedef struct {
    progress_t p;
    int tty, json;
    double every; /* --every: step lines at most this often per rank (0: none) */
    int dirty;
    double last_draw;
    int final_exit; /* -1 until a final state arrives */
    int events;     /* events this connection */
} watch_t;

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void draw(watch_t *w)
{
    struct winsize ws;
    int cols = 0, rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
        cols = ws.ws_col;
        rows = ws.ws_row;
    }
    progress_draw(&w->p, stdout, now_s(), cols, rows);
    w->dirty = 0;
    w->last_draw = mono();
}

static int on_event(void *ctx, const char *type, const char *id, const char *data)
{
    watch_t *w = ctx;
    w->events++;
    json_t *ev = json_loads(data, 0, NULL);
    if (!json_is_object(ev)) {
        json_decref(ev);
        return 0; /* not ours to judge: skip it */
    }
    if (w->json) {
        fmt_json_line(stdout, ev);
        fflush(stdout);
    }
    int rank = -1;
    int what = progress_event(&w->p, ev, &rank);
    json_decref(ev);
    if (what == PROGRESS_STATE && fmt_state_exit(w->p.state) >= 0) w->final_exit = fmt_state_exit(w->p.state);
    if (w->json || what == PROGRESS_NONE) return 0;
    if (w->tty) {
        w->dirty = 1;
        if (mono() - w->last_draw >= DRAW_EVERY_S) draw(w);
        return 0;
    }
    if (what == PROGRESS_RANK) progress_print_due(&w->p, rank, mono(), w->every, stdout);
    else if (what == PROGRESS_STATE) progress_print_state(&w->p, stdout);
    else progress_print_plan(&w->p, stdout);
    fflush(stdout);
    return 0;
}

/* Between events: redraws what changed, and the AGE column every second. */
static int on_tick(void *ctx)
{
    watch_t *w = ctx;
    double since = mono() - w->last_draw;
    if (w->tty && !w->json && ((w->dirty && since >= DRAW_EVERY_S) || since >= 1.0)) draw(w);
    return 0;
}

/* The last line: the final state, how long it ran, why. */
static void final_line(cli_ctx_t *cx, watch_t *w, const char *path)
{
    json_t *job = NULL;
    char ran[32] = "";
    /* The state and reason are the stream's: a GET may be served from the API's short
     * cache and lag behind the final state event. */
    if (cli_get_json(cx, path, &job) == CLI_EXIT_OK) {
        double st = json_number_value(json_object_get(job, "started"));
        double fin = json_number_value(json_object_get(job, "finished"));
        if (st > 0 && fin >= st) {
            char d[24];
            fmt_duration(fin - st, d, sizeof d);
            snprintf(ran, sizeof ran, " after %s", d);
        }
        json_decref(job);
    }
    if (w->tty) draw(w);
    printf("%s %s%s%s%s\n", w->p.job, w->p.state, ran, w->p.reason[0] ? ": " : "", w->p.reason);
    fflush(stdout);
}

int cli_watch(cli_ctx_t *cx, const char *id)
{
    char path[512], events[560], nodes_path[560];
    if (client_job_path(path, sizeof path, id, "") != 0) {
        fprintf(stderr, "pacer watch: job id too long\n");
        return CLI_EXIT_USAGE;
    }
    snprintf(events, sizeof events, "%s/events", path);
    snprintf(nodes_path, sizeof nodes_path, "%s/nodes", path);
    watch_t w;
    memset(&w, 0, sizeof w);
    w.final_exit = -1;
    w.json = cx->args->json;
    w.every = (double)cx->args->every;
    const char *term = getenv("TERM");
    w.tty = !w.json && isatty(STDOUT_FILENO) && !(term && strcmp(term, "dumb") == 0);
    progress_init(&w.p, id);

    json_t *job = NULL, *nodes = NULL;
    int rc = cli_get_json(cx, path, &job);
    if (rc) goto out;
    progress_job(&w.p, job);
    json_decref(job);
    if (cli_get_json(cx, nodes_path, &nodes) == CLI_EXIT_OK) progress_nodes(&w.p, nodes);
    json_decref(nodes);
    if (w.tty) {
        draw(&w);
    } else if (!w.json) {
        progress_print_header(&w.p, stdout); /* the stream's first event says the state */
        for (int i = 0; i < w.p.nranks; i++) progress_print_due(&w.p, i, mono(), w.every, stdout);
        fflush(stdout);
    }

    char last_id[SSE_ID_MAX] = "", err[1024] = "";
    int failures = 0;
    for (;;) {
        sse_parser_t parser;
        sse_init(&parser, on_event, &w);
        client_resp_t r;
        w.events = 0;
        int s = client_stream(cx->client, events, last_id, &parser, on_tick, &w, &r, err, sizeof err);
        if (parser.last_id[0]) snprintf(last_id, sizeof last_id, "%s", parser.last_id);
        long retry_ms = parser.retry_ms > 0 && parser.retry_ms <= 30000 ? parser.retry_ms : 2000;
        sse_free(&parser);
        if (s == 0 && r.status != 200) {
            /* The API refused the stream (unknown job, too many streams, Redis down). */
            rc = cli_api_error(cx, &r);
            client_resp_free(&r);
            goto out;
        }
        client_resp_free(&r);
        if (w.final_exit >= 0) break;
        if (w.events > 0) failures = 0;
        if (++failures > RECONNECT_TRIES) {
            if (w.tty) fputc('\n', stdout);
            rc = cli_unreachable(cx, s != 0 && err[0] ? err : "the event stream keeps ending before the job does");
            goto out;
        }
        nap_ms(failures == 1 ? 200 : retry_ms);
    }
    if (w.json) rc = w.final_exit;
    else {
        final_line(cx, &w, path);
        rc = fmt_state_exit(w.p.state) >= 0 ? fmt_state_exit(w.p.state) : w.final_exit;
    }
out:
    progress_free(&w.p);
    return rc;
}

int cmd_watch(cli_ctx_t *cx) { return cli_watch(cx, cx->args->arg); }
