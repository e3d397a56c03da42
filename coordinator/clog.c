/* coordinator/clog.c - see clog.h. */
#include "clog.h"

#include "log.h"

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
    va_list ap;
    va_start(ap, fmt);
    log_vline("pacer-coordinator", fmt, ap);
    va_end(ap);
}
