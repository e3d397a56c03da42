/* tests/unit/test_util.h - helpers several unit-test programs share: a monotonic clock,
 * a short nap for polling with a deadline, and removing a test's temporary directory.
 * Header-only (static) because each test is its own program. */
#ifndef PACER_TEST_UTIL_H
#define PACER_TEST_UTIL_H

#include <ftw.h>
#include <stdio.h>
#include <time.h>

static inline double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* 20 ms: the polling step of every "await with a deadline" loop. */
static inline void nap(void)
{
    struct timespec ts = { 0, 20000000L };
    nanosleep(&ts, NULL);
}

static inline int test_rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

/* rm -rf dir (no symlinks followed). */
static inline int rm_tree(const char *dir)
{
    return nftw(dir, test_rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
