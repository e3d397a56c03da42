/* coordinator/tickconn.c - see tickconn.h. */
#include "tickconn.h"

#include "clock.h"
#include "clog.h"

#define RC_BACKOFF_MIN_S 0.25
#define RC_BACKOFF_MAX_S 2.0
#define RC_TIMEOUT_S 1.0

void tickconn_broken(coordinator_t *c, const char *what)
{
    if (!c->rc) return;
    clog_printf("redis: connection lost (%s: %s); processes stay supervised, retrying", what,
                c->rc->errstr[0] ? c->rc->errstr : "error reply");
    redisFree(c->rc);
    c->rc = NULL;
    c->rc_backoff = RC_BACKOFF_MIN_S;
    c->rc_next_try = clock_wall_s() + c->rc_backoff;
    c->rc_down_logged = 1;
}

/* Maps a JS code from a call on c->rc: a broken connection is dropped. */
int tickconn_check(coordinator_t *c, int js, const char *what)
{
    if (js == JS_EREDIS) tickconn_broken(c, what);
    return js;
}

void tickconn_ensure(coordinator_t *c, double now)
{
    if (c->rc || now < c->rc_next_try) return;
    char err[256];
    c->rc = redis_url_connect(&c->url, RC_TIMEOUT_S, err, sizeof err);
    if (!c->rc) {
        if (!c->rc_down_logged) clog_printf("redis: cannot connect to %s (%s); retrying", c->redis_url_shown, err);
        c->rc_down_logged = 1;
        c->rc_backoff = c->rc_backoff < RC_BACKOFF_MIN_S ? RC_BACKOFF_MIN_S : c->rc_backoff * 2;
        if (c->rc_backoff > RC_BACKOFF_MAX_S) c->rc_backoff = RC_BACKOFF_MAX_S;
        c->rc_next_try = now + c->rc_backoff;
        return;
    }
    if (c->rc_down_logged) clog_printf("redis: connected to %s", c->redis_url_shown);
    c->rc_down_logged = 0;
    c->rc_backoff = 0;
    c->redis_up_since = now;
}
