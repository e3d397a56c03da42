/* common/errmsg.c - see errmsg.h. */
#include "errmsg.h"

#include <stdio.h>

int errmsg_v(char *err, size_t errlen, int code, const char *fmt, va_list ap)
{
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    return code;
}

int errmsg_code(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_v(err, errlen, code, fmt, ap);
    va_end(ap);
    return code;
}

int errmsg(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    errmsg_v(err, errlen, -1, fmt, ap);
    va_end(ap);
    return -1;
}

void errmsg_one_line(char *err, size_t errlen)
{
    for (size_t i = 0; err && i < errlen && err[i]; i++)
        if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f) err[i] = '?';
}
