/* coordinator/clog.h - the coordinator's log lines: stderr, one line each, with a
 * timestamp, so that a daemon's log can be read next to the jobs' logs. */
#ifndef PACER_CLOG_H
#define PACER_CLOG_H

#if defined(__GNUC__)
#define CLOG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLOG_PRINTF(a, b)
#endif

/* "2024-05-01 12:00:00.123 pacer-coordinator: <message>" */
void clog_printf(const char *fmt, ...) CLOG_PRINTF(1, 2);

#endif
