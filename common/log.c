/* common/log.c - see log.h. */
#include "log.h"

#include "clock.h"

#include <stdio.h>
#include <time.h>

void log_vline(const char *who, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    struct timespec ts;
    clock_wall_ts(&ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
    /* One fprintf per line: stderr is unbuffered, so lines from threads do not mix. */
    fprintf(stderr, "%s.%03ld %s: %s\n", when, ts.tv_nsec / 1000000L, who, msg);
}
