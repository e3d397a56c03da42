/* common/fs.c - see fs.h. */
#include "fs.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_mkdir_p(const char *path, unsigned mode)
{
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(tmp, (mode_t)mode) != 0 && errno != EEXIST) return -1;
    /* EEXIST also comes for a file of that name: it is not the directory asked for. */
    struct stat st;
    if (stat(tmp, &st) != 0) return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path) != 0 && errno != ENOENT ? -1 : 0;
}

int fs_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    /* FTW_DEPTH: contents before their directory; FTW_PHYS: a link is an entry, not a way out. */
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

int fs_atomic_begin(const char *path, char *tmp, size_t tmplen, unsigned mode)
{
    /* A counter, not only the pid: two threads of one process may write beside each other. */
    static unsigned seq;
    unsigned n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
    int len = snprintf(tmp, tmplen, "%s.tmp.%ld.%u", path, (long)getpid(), n);
    if (len < 0 || (size_t)len >= tmplen) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
}

int fs_atomic_commit(int fd, const char *tmp, const char *path)
{
    int rc = fsync(fd), e = errno;
    if (close(fd) != 0 && rc == 0) rc = -1, e = errno;
    if (rc == 0 && fs_rename(tmp, path) != 0) rc = -1, e = errno;
    if (rc != 0) {
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

int fs_rename(const char *from, const char *to)
{
    if (rename(from, to) != 0) return -1;
    /* The rename itself durable: sync the directory that holds the new name. */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", to);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = 0;
    else snprintf(dir, sizeof dir, ".");
    fs_sync_dir(dir);
    return 0;
}

void fs_sync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
}

void fs_atomic_abort(int fd, const char *tmp)
{
    if (fd >= 0) close(fd);
    unlink(tmp);
}

int fs_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

int fs_read_all(int fd, void *data, size_t len)
{
    char *p = data;
    while (len > 0) {
        ssize_t k = read(fd, p, len);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            return -1;
        }
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

/* The body of both whole-buffer writers: fd (open on tmp) gets data, then commit or abort. */
static int write_commit(int fd, const char *tmp, const char *path, const void *data, size_t len)
{
    if (fs_write_all(fd, data, len) != 0) {
        int e = errno;
        fs_atomic_abort(fd, tmp);
        errno = e;
        return -1;
    }
    return fs_atomic_commit(fd, tmp, path);
}

int fs_atomic_write(const char *path, const void *data, size_t len, unsigned mode)
{
    char tmp[4200];
    int fd = fs_atomic_begin(path, tmp, sizeof tmp, mode);
    if (fd < 0) return -1;
    return write_commit(fd, tmp, path, data, len);
}

int fs_atomic_write_fixed(const char *path, const void *data, size_t len, unsigned mode)
{
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    /* A crash's leftover is replaced, and the file is created with mode from the start
     * (O_EXCL after the unlink: never an older file's mode, e.g. a secret's 0600). */
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)mode);
    if (fd < 0) return -1;
    return write_commit(fd, tmp, path, data, len);
}

/* The PID of a name ending in ".tmp.PID.N" (fs_atomic_begin's), or 0 when it has none. */
static long tmp_owner(const char *name)
{
    const char *t = NULL;
    for (const char *p = strstr(name, ".tmp."); p; p = strstr(p + 1, ".tmp.")) t = p;
    if (!t) return 0;
    char *end;
    errno = 0;
    long pid = strtol(t + 5, &end, 10);
    if (errno || pid <= 0 || end == t + 5 || *end != '.' || end[1] < '0' || end[1] > '9') return 0;
    for (const char *q = end + 1; *q; q++)
        if (*q < '0' || *q > '9') return 0;
    return pid;
}

int fs_atomic_sweep(const char *dir, const char *prefix, void (*removed)(const char *path, long long bytes, void *ctx),
                    void *ctx)
{
    DIR *d = opendir(dir);
    if (!d) return errno == ENOENT ? 0 : -1;
    size_t plen = prefix ? strlen(prefix) : 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = tmp_owner(e->d_name);
        if (!pid || (plen && strncmp(e->d_name, prefix, plen) != 0)) continue;
        /* EPERM: alive, someone else's */
        if (pid <= 0x7fffffffL && (kill((pid_t)pid, 0) == 0 || errno != ESRCH)) continue;
        char path[4096];
        struct stat st;
        int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof path || lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        if (unlink(path) != 0) continue;
        n++;
        if (removed) removed(path, (long long)st.st_size, ctx);
    }
    closedir(d);
    return n;
}
