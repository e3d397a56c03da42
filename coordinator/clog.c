/* coordinator/clog.c - see clog.h. */
#include "clog.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

double clog_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void clog_printf(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    /* One fprintf per line: stderr is unbuffered, so lines from threads do not mix. */
    fprintf(stderr, "%s.%03ld pacer-coordinator: %s\n", when, ts.tv_nsec / 1000000L, msg);
}
