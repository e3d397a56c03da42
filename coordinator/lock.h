/* coordinator/lock.h - pacer:coordinator:lock: one daemon per Redis, since a second one
 * would launch every job twice. The holder's value is "host pid start-time nonce"; it is
 * set with a 15 s expiry and refreshed every second by the tick, so a holder that stops
 * loses it within 15 s, and one of this host that is gone (killed -9) is taken over at
 * once. Checks and changes are single Lua scripts. */
#ifndef PACER_COORD_LOCK_H
#define PACER_COORD_LOCK_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "coordinator.h"

/* The daemon's hold of the lock (c->dlock). */
typedef struct coord_lock {
    int held, conflict_logged;
    char value[320];
} coord_lock_t;

/* Sets c->dlock->value (c->hostname must be set). */
void coord_lock_init(coordinator_t *c);
/* Takes or refreshes the lock on rc. Returns 1 held, 0 held by another live coordinator
 * (its value in who), or JS_EREDIS. */
int coord_lock_try(coordinator_t *c, redisContext *rc, char *who, size_t wholen);
/* Gives the lock up on c->conn->rc if this coordinator holds it. */
void coord_lock_release(coordinator_t *c);

#endif
