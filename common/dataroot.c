/* common/dataroot.c - see dataroot.h. */
#include "dataroot.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Entries below g_nroots never change while threads read them: dataroot_add writes the
 * next one, then publishes the count (release), and readers load the count once
 * (acquire) and use that many. */
static char g_roots[DATAROOT_MAX][DATAROOT_PATH];
static const char *g_rootv[DATAROOT_MAX];
static atomic_int g_nroots;
static pthread_mutex_t g_add_lock = PTHREAD_MUTEX_INITIALIZER;

static int nroots_now(void) { return atomic_load_explicit(&g_nroots, memory_order_acquire); }

/* 1 when real (already resolved) is one of roots or below one. */
static int dataroot_holds(const char *const *roots, int nroots, const char *real)
{
    for (int i = 0; i < nroots; i++) {
        size_t n = strlen(roots[i]);
        if (strncmp(real, roots[i], n) == 0 && (real[n] == 0 || real[n] == '/' || (n == 1 && roots[i][0] == '/')))
            return 1;
    }
    return 0;
}

int dataroot_resolve(const char *const *roots, int nroots, const char *path, char *real)
{
    char up[DATAROOT_PATH], child[DATAROOT_PATH], got[PATH_MAX];
    struct stat st;
    if (realpath(path, got)) {
        if (strlen(got) >= DATAROOT_PATH || !dataroot_holds(roots, nroots, got)) return DATAROOT_OUTSIDE;
        memcpy(real, got, strlen(got) + 1);
        return DATAROOT_OK;
    }
    int why = errno;
    /* Does not resolve: where its nearest existing folder is decides whether its absence
     * may be told ("/etc/nothing" and "/etc/passwd" get the same answer). */
    if (snprintf(up, sizeof up, "%s", path) >= (int)sizeof up) return DATAROOT_OUTSIDE;
    for (;;) {
        memcpy(child, up, strlen(up) + 1);
        char *slash = strrchr(up, '/');
        if (!slash) return DATAROOT_OUTSIDE; /* relative: nothing to anchor it */
        if (slash == up) {
            up[1] = 0;
        } else {
            *slash = 0;
        }
        if (realpath(up, got)) break;
        if (strcmp(up, "/") == 0) return DATAROOT_OUTSIDE;
    }
    if (!dataroot_holds(roots, nroots, got)) return DATAROOT_OUTSIDE;
    /* The first component that does not resolve must not be there at all: a dangling
     * link under the root (ROOT/x -> /etc/nothing) would otherwise tell what is missing
     * outside. */
    if (lstat(child, &st) == 0) return DATAROOT_OUTSIDE;
    errno = why;
    return DATAROOT_MISSING;
}

int dataroot_set(const char *const *roots, int nroots, char *err, size_t errlen)
{
    atomic_store(&g_nroots, 0);
    if (nroots > DATAROOT_MAX) return errmsg(err, errlen, "--data-root: at most %d", DATAROOT_MAX);
    for (int i = 0; i < nroots; i++) {
        char got[PATH_MAX];
        if (!realpath(roots[i], got) || strlen(got) >= DATAROOT_PATH) {
            int e = errno;
            atomic_store(&g_nroots, 0);
            return errmsg(err, errlen, "--data-root %s: %s", roots[i], strerror(e));
        }
        memcpy(g_roots[i], got, strlen(got) + 1);
        g_rootv[i] = g_roots[i];
    }
    atomic_store_explicit(&g_nroots, nroots, memory_order_release);
    return 0;
}

int dataroot_add(const char *root, char *err, size_t errlen)
{
    char got[PATH_MAX];
    if (!realpath(root, got) || strlen(got) >= DATAROOT_PATH)
        return errmsg(err, errlen, "data root %s: %s", root, strerror(errno ? errno : ENAMETOOLONG));
    pthread_mutex_lock(&g_add_lock);
    int n = atomic_load(&g_nroots), rc = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(g_roots[i], got) == 0) goto out; /* already one of them */
    if (n >= DATAROOT_MAX) {
        rc = errmsg(err, errlen, "data root %s: more than %d roots", root, DATAROOT_MAX);
        goto out;
    }
    memcpy(g_roots[n], got, strlen(got) + 1);
    g_rootv[n] = g_roots[n];
    atomic_store_explicit(&g_nroots, n + 1, memory_order_release);
out:
    pthread_mutex_unlock(&g_add_lock);
    return rc;
}

int dataroot_count(void) { return nroots_now(); }

static int outside(const char *path, const char *what, char *err, size_t errlen)
{
    return errmsg(err, errlen, "%s: %s that leaves the data roots (only what resolves under a --data-root is read)",
                  path, what);
}

int dataroot_check(const char *path, const char *what, char *err, size_t errlen)
{
    char real[DATAROOT_PATH];
    int n = nroots_now();
    if (n == 0) return 0;
    int rc = dataroot_resolve(g_rootv, n, path, real);
    /* missing under a root: the open that follows says so */
    return rc == DATAROOT_OUTSIDE ? outside(path, what, err, errlen) : 0;
}

int dataroot_check_fd(int fd, const char *path, char *err, size_t errlen)
{
    char proc[64], real[PATH_MAX];
    int nroots = nroots_now();
    if (nroots == 0) return 0;
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(proc, real, sizeof real - 1);
    if (n < 0) /* no /proc: the path's resolution now is the best there is */
        return dataroot_check(path, "a file", err, errlen);
    real[n] = 0;
    if (!dataroot_holds(g_rootv, nroots, real)) return outside(path, "a file", err, errlen);
    return 0;
}

/* What a file that is not a regular one is, for the message. */
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a FIFO"
           : S_ISDIR(m)  ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a special file";
}

static int open_checked(const char *path, int confined, char *err, size_t errlen)
{
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        const int e = errno;
        if (e == ENOENT) errmsg(err, errlen, "%s: no such file", path);
        else errmsg(err, errlen, "%s: cannot open: %s", path, strerror(e));
        errno = e;
        return -1;
    }
    struct stat st;
    int e = EACCES;
    /* the roots first: outside them, nothing about the file (not even its type) is told */
    if (confined && dataroot_check_fd(fd, path, err, errlen) != 0) goto refused;
    if (fstat(fd, &st) != 0) {
        e = errno;
        errmsg(err, errlen, "%s: cannot stat: %s", path, strerror(e));
        goto refused;
    }
    if (!S_ISREG(st.st_mode)) {
        errmsg(err, errlen, "%s: %s, not a regular file (pacer reads data and tokenizers from files)", path,
               file_kind(st.st_mode));
        goto refused;
    }
    const int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        e = errno;
        errmsg(err, errlen, "%s: cannot clear O_NONBLOCK: %s", path, strerror(e));
        goto refused;
    }
    return fd;
refused:
    close(fd);
    errno = e;
    return -1;
}

int dataroot_open(const char *path, char *err, size_t errlen) { return open_checked(path, 1, err, errlen); }

int dataroot_open_own(const char *path, char *err, size_t errlen) { return open_checked(path, 0, err, errlen); }
