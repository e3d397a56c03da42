/* common/passert.c - see passert.h. */
#include "passert.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void pacer_assert_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (expr) fprintf(stderr, "\nassertion failed: %s (%s:%d)\n", expr, file, line);
    else fprintf(stderr, "\npanic at %s:%d\n", file, line);
    fflush(stderr);
    abort();
}
