/* coordinator/embedded.h - the embedded Redis: Debian's redis-server run as a child on a
 * unix socket in the state directory (port 0, AOF on), for a coordinator started without
 * --redis.
 *
 * The server runs in its own session, so it outlives a coordinator that is killed: a
 * coordinator that starts and finds the socket answering adopts the server recorded in
 * STATE_DIR/redis.pid (the running jobs keep reporting into it meanwhile). A server that
 * dies is started again by embedded_check() from the coordinator's tick; the AOF brings
 * the state back.
 */
#ifndef PACER_EMBEDDED_H
#define PACER_EMBEDDED_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
    char dir[4096];    /* absolute state directory (the AOF lives here) */
    char sock[108];    /* STATE_DIR/redis.sock */
    char url[128 + 8]; /* unix://STATE_DIR/redis.sock */
    char server[1024]; /* redis-server binary */
    pid_t pid;         /* 0 when not known */
    unsigned long long pstart;
    int is_child;    /* spawned by this process (waitpid works) */
    int owned;       /* ours to restart and stop (spawned or adopted via redis.pid) */
    double next_try; /* restart backoff */
    double backoff;
} embedded_t;

/* Adopts a live server on STATE_DIR/redis.sock or starts one, and waits (deadline
 * timeout_s) until it answers PING. state_dir must be absolute. Returns 0 or -1 with err. */
int embedded_start(embedded_t *e, const char *state_dir, const char *server, double timeout_s, char *err, size_t errlen);

/* Non-blocking: when the server has died, starts it again (with backoff). Returns 1 when
 * it (re)started one, 0 when nothing was needed, -1 when a restart failed. */
int embedded_check(embedded_t *e);

/* SIGTERM (the server writes its AOF and exits), then SIGKILL after timeout_s. */
void embedded_stop(embedded_t *e, double timeout_s);

#endif
