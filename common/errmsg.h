/* common/errmsg.h - the one way a function that parses outside input says what is wrong:
 * it fills the caller's (err, errlen) buffer and returns -1. Shared by the readers of
 * users' data, the catalog and the decoded cache, so each message is formatted the same
 * way and a NULL or empty buffer is always safe. */
#ifndef PACER_ERRMSG_H
#define PACER_ERRMSG_H

#include <stddef.h>

/* Formats the message into err (truncated to errlen; nothing when err is NULL or errlen
 * is 0) and returns -1, so a caller writes `return errmsg(err, errlen, "...", ...);`. */
int errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
