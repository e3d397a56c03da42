/* tests/unit/test_util.h - helpers several unit-test programs share: a monotonic clock,
 * a short nap for polling with a deadline (both common/clock.h underneath), and removing
 * a test's temporary directory. Header-only (static) because each test is its own program. */
#ifndef PACER_TEST_UTIL_H
#define PACER_TEST_UTIL_H

#include <ftw.h>
#include <stdio.h>

#include "clock.h"

static inline double mono(void) { return clock_mono_s(); }

/* 20 ms: the polling step of every "await with a deadline" loop. */
static inline void nap(void) { clock_sleep_s(0.02); }

static inline int test_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf dir (no symlinks followed). */
static inline int rm_tree(const char *dir) { return nftw(dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

#endif
