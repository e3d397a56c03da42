/* common/numarg.c - see numarg.h. */
#include "numarg.h"

#include <errno.h>
#include <stdlib.h>

int numarg_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !(v >= lo && v <= hi)) return -1; /* NaN fails the range */
    *out = v;
    return 0;
}

int numarg_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}
