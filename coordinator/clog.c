/* coordinator/clog.c - see clog.h. */
#include "clog.h"

#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void clog_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_vline("pacer-coordinator", fmt, ap);
    va_end(ap);
}
