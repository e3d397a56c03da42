/* common/hostname.c - see hostname.h. */
#include "hostname.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void host_name(char *out, size_t len)
{
    if (len == 0) return;
    const char *node = getenv("SLURMD_NODENAME");
    if (node && *node) {
        snprintf(out, len, "%s", node);
        return;
    }
    if (gethostname(out, len) != 0) snprintf(out, len, "unknown");
    out[len - 1] = 0;
}
