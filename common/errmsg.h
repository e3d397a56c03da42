/* common/errmsg.h - the one way a function says what is wrong: it fills the caller's
 * (err, errlen) buffer and returns an error code, -1 or a module's own (DATA_EFORMAT,
 * COORD_EINVAL, ...). Shared by the readers of users' data, the catalog, the job spec, the
 * decoded cache, the data loaders and the coordinator's API, so each message is formatted
 * the same way and a NULL or empty buffer is always safe. */
#ifndef PACER_ERRMSG_H
#define PACER_ERRMSG_H

#include <stdarg.h>
#include <stddef.h>

/* Formats the message into err (truncated to errlen; nothing when err is NULL or errlen
 * is 0) and returns -1, so a caller writes `return errmsg(err, errlen, "...", ...);`. */
int errmsg(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same, returning code: `rc = errmsg_code(err, errlen, DATA_EFORMAT, "...", ...);`. */
int errmsg_code(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same over a va_list, for a module's wrapper that adds to the message (spec.c makes
 * it one line). */
int errmsg_v(char *err, size_t errlen, int code, const char *fmt, va_list ap) __attribute__((format(printf, 4, 0)));
/* Control characters in the message (a key or value from a document may hold "\n")
 * become '?', so that it stays one line in a log or an HTTP error body. Safe on a NULL or
 * empty buffer. */
void errmsg_one_line(char *err, size_t errlen);

#endif
