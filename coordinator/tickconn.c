/* coordinator/tickconn.c - see tickconn.h. */
#include "tickconn.h"

#include "clock.h"
#include "clog.h"
#include "coord_internal.h"
#include "jobstore.h"

#define RC_BACKOFF_MIN_S 0.25
#define RC_BACKOFF_MAX_S 2.0
#define RC_TIMEOUT_S 1.0

void tickconn_broken(coordinator_t *c, const char *what)
{
    if (!c->conn->rc) return;
    clog_printf("redis: connection lost (%s: %s); processes stay supervised, retrying", what,
                c->conn->rc->errstr[0] ? c->conn->rc->errstr : "error reply");
    redisFree(c->conn->rc);
    c->conn->rc = NULL;
    c->conn->backoff = RC_BACKOFF_MIN_S;
    c->conn->next_try = clock_wall_s() + c->conn->backoff;
    c->conn->down_logged = 1;
}

/* Maps a JS code from a call on c->conn->rc: a broken connection is dropped. */
int tickconn_check(coordinator_t *c, int js, const char *what)
{
    if (js == JS_EREDIS) tickconn_broken(c, what);
    return js;
}

void tickconn_ensure(coordinator_t *c, double now)
{
    if (c->conn->rc || now < c->conn->next_try) return;
    char err[256];
    c->conn->rc = redis_url_connect(&c->url, RC_TIMEOUT_S, err, sizeof err);
    if (!c->conn->rc) {
        if (!c->conn->down_logged) clog_printf("redis: cannot connect to %s (%s); retrying", c->redis_url_shown, err);
        c->conn->down_logged = 1;
        c->conn->backoff = c->conn->backoff < RC_BACKOFF_MIN_S ? RC_BACKOFF_MIN_S : c->conn->backoff * 2;
        if (c->conn->backoff > RC_BACKOFF_MAX_S) c->conn->backoff = RC_BACKOFF_MAX_S;
        c->conn->next_try = now + c->conn->backoff;
        return;
    }
    if (c->conn->down_logged) clog_printf("redis: connected to %s", c->redis_url_shown);
    c->conn->down_logged = 0;
    c->conn->backoff = 0;
    c->conn->up_since = now;
}
