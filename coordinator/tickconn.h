/* coordinator/tickconn.h - the tick's own Redis connection, c->conn->rc: connected with backoff
 * (0.25 s doubling to 2 s) and dropped when a reply shows it broken. The daemon goes on
 * supervising processes while it is down (docs/ARCHITECTURE.md). Used by the tick thread,
 * and by coordinator_start and coordinator_stop before and after that thread runs. */
#ifndef PACER_TICKCONN_H
#define PACER_TICKCONN_H

#include <hiredis/hiredis.h>

#include "coordinator.h"

/* The coordinator's tick connection (c->conn). */
typedef struct tickconn {
    redisContext *rc;
    double next_try, backoff, up_since;
    int down_logged;
} tickconn_t;

/* Connects when there is no connection and the backoff allows (now: clock_wall_s()). */
void tickconn_ensure(coordinator_t *c, double now);
/* Drops a broken connection, logs it once, and starts the backoff. */
void tickconn_broken(coordinator_t *c, const char *what);
/* Returns js; a JS_EREDIS from a call on c->conn->rc drops the connection first. */
int tickconn_check(coordinator_t *c, int js, const char *what);

#endif
