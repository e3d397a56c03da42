/* common/ckptdir.c - see ckptdir.h. */
#include "ckptdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

#define STEP_MAX 1000000000000LL /* common/spec.c's MAX_STEPS */
#define EPOCH_MAX 100000L        /* common/spec.c's MAX_EPOCHS */
#define ACC_SCALE 1000000.0

int ckptdir_name(char *out, size_t len, const char *name, long long step, long epoch, double accuracy)
{
    if (step < 0 || step > STEP_MAX || epoch < 0 || epoch > EPOCH_MAX || !(accuracy <= 1.0)) return -1;
    int n = accuracy >= 0
                ? snprintf(out, len, "%s.step%lld-epoch%ld-acc%ld.ckpt", name, step, epoch, lround(accuracy * ACC_SCALE))
                : snprintf(out, len, "%s.step%lld-epoch%ld.ckpt", name, step, epoch);
    return n > 0 && (size_t)n < len ? 0 : -1;
}

/* Digits at *p (at most maxd of them, no sign), their value at most max, into *v. */
static int digits(const char **p, int maxd, long long max, long long *v)
{
    long long x = 0;
    int d = 0;
    while (**p >= '0' && **p <= '9') {
        if (++d > maxd) return -1;
        x = x * 10 + (**p - '0');
        (*p)++;
    }
    if (d == 0 || x > max) return -1;
    *v = x;
    return 0;
}

int ckptdir_parse(const char *file, const char *name, ckpt_entry_t *e)
{
    size_t nl = strlen(name), fl = strlen(file);
    if (fl >= CKPTDIR_FILE_MAX || strncmp(file, name, nl) != 0 || strncmp(file + nl, ".step", 5) != 0) return -1;
    const char *p = file + nl + 5;
    long long step, epoch, acc = -1;
    if (digits(&p, 13, STEP_MAX, &step) != 0 || strncmp(p, "-epoch", 6) != 0) return -1;
    p += 6;
    if (digits(&p, 6, EPOCH_MAX, &epoch) != 0) return -1;
    if (strncmp(p, "-acc", 4) == 0) {
        p += 4;
        if (digits(&p, 7, (long long)ACC_SCALE, &acc) != 0) return -1;
    }
    if (strcmp(p, ".ckpt") != 0) return -1;
    memset(e, 0, sizeof *e);
    e->step = step;
    e->epoch = (long)epoch;
    e->accuracy = acc >= 0 ? (double)acc / ACC_SCALE : -1.0;
    memcpy(e->file, file, fl + 1);
    return 0;
}

static int newest_first(const void *a, const void *b)
{
    const ckpt_entry_t *x = a, *y = b;
    if (x->step != y->step) return x->step > y->step ? -1 : 1;
    return strcmp(x->file, y->file);
}

void ckptdir_choose(ckpt_entry_t *e, int n, int keep_last, int keep_best, long long keep_upto)
{
    if (n <= 0) return;
    qsort(e, (size_t)n, sizeof *e, newest_first);
    long long newest = LLONG_MAX;
    for (int i = 0; i < n; i++)
        if (e[i].latest) newest = e[i].step;
    int kept = 0, best = -1, good = 0;
    for (int i = 0; i < n; i++) {
        e[i].keep = e[i].best = 0;
        if (e[i].step < 0 || e[i].step > newest) continue; /* unknown, or rolled back */
        if (e[i].latest || kept < keep_last) {
            e[i].keep = 1;
            kept++;
        }
        if (keep_upto >= 0 && e[i].step <= keep_upto && !good) e[i].keep = good = 1;
        /* Newest first: a later entry replaces the best only when strictly better. */
        if (e[i].accuracy >= 0 && (best < 0 || e[i].accuracy > e[best].accuracy)) best = i;
    }
    if (best >= 0) {
        e[best].best = 1;
        if (keep_best) e[best].keep = 1;
    }
}

/* The linked entries of dir (latest flagged by NAME.ckpt's inode) into out; *latest_ino and
 * *latest_bytes describe NAME.ckpt (0 when absent). */
static int scan(const char *dir, const char *name, ckpt_entry_t *out, int max, unsigned long long *latest_ino,
                long long *latest_bytes, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    *latest_ino = 0;
    *latest_bytes = 0;
    if (snprintf(path, sizeof path, "%s/%s.ckpt", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        *latest_ino = (unsigned long long)st.st_ino;
        *latest_bytes = (long long)st.st_size;
    }
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return -1;
    }
    int n = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        ckpt_entry_t e;
        if (ckptdir_parse(de->d_name, name, &e) != 0) continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, de->d_name) >= (int)sizeof path) continue;
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue; /* gone meanwhile, or not a file */
        if (n == max) {
            snprintf(err, errlen, "%s: more than %d checkpoints of %s", dir, max, name);
            rc = -1;
            break;
        }
        e.bytes = (long long)st.st_size;
        e.ino = (unsigned long long)st.st_ino;
        e.latest = *latest_ino != 0 && e.ino == *latest_ino;
        out[n++] = e;
    }
    closedir(d);
    return rc ? rc : n;
}

int ckptdir_list(const char *dir, const char *name, ckpt_entry_t *out, int max, long long *total_bytes, char *err,
                 size_t errlen)
{
    unsigned long long lino;
    long long lbytes;
    *total_bytes = 0;
    int n = scan(dir, name, out, max, &lino, &lbytes, err, errlen);
    if (n < 0) return -1;
    int linked = 0;
    for (int i = 0; i < n; i++) linked |= out[i].latest;
    if (lino && !linked) {
        /* NAME.ckpt without a linked name (an older pacer wrote it, or linking failed). */
        if (n == max) {
            snprintf(err, errlen, "%s: more than %d checkpoints of %s", dir, max, name);
            return -1;
        }
        ckpt_entry_t *e = &out[n++];
        memset(e, 0, sizeof *e);
        e->step = e->epoch = -1;
        e->accuracy = -1;
        e->bytes = lbytes;
        e->ino = lino;
        e->latest = 1;
        snprintf(e->file, sizeof e->file, "%s.ckpt", name);
    }
    ckptdir_choose(out, n, n, 0, -1);
    /* Unknown steps sort last; a file under two names counts once. */
    for (int i = 0; i < n; i++) {
        int dup = 0;
        for (int j = 0; j < i && !dup; j++) dup = out[j].ino == out[i].ino;
        if (!dup) *total_bytes += out[i].bytes;
    }
    return n;
}

int ckptdir_retain(const char *dir, const char *name, long long step, long epoch, double accuracy, int keep_last,
                   int keep_best, long long keep_upto, char *err, size_t errlen)
{
    char file[CKPTDIR_FILE_MAX], latest[PATH_MAX], linked[PATH_MAX], tmp[PATH_MAX + 8];
    if (ckptdir_name(file, sizeof file, name, step, epoch, accuracy) != 0) {
        snprintf(err, errlen, "%s: no checkpoint name for step %lld, epoch %ld", dir, step, epoch);
        return -1;
    }
    if (snprintf(latest, sizeof latest, "%s/%s.ckpt", dir, name) >= (int)sizeof latest ||
        snprintf(linked, sizeof linked, "%s/%s", dir, file) >= (int)sizeof linked) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    snprintf(tmp, sizeof tmp, "%s.tmp", linked);
    /* Link under a temporary name, then rename: a checkpoint of the same step (a re-save,
     * or a run that resumed from an older one) is replaced in one step. */
    unlink(tmp);
    if (link(latest, tmp) != 0 || fs_rename(tmp, linked) != 0) {
        snprintf(err, errlen, "%s: cannot link %s as %s: %s", dir, latest, file, strerror(errno));
        unlink(tmp);
        return -1;
    }
    unlink(tmp); /* still there when it already was that file: rename then does nothing */
    ckpt_entry_t *e = malloc(CKPTDIR_MAX * sizeof *e);
    if (!e) {
        snprintf(err, errlen, "%s: out of memory", dir);
        return -1;
    }
    unsigned long long lino;
    long long lbytes;
    int rc = 0, n = scan(dir, name, e, CKPTDIR_MAX, &lino, &lbytes, err, errlen);
    if (n < 0) rc = -1;
    if (keep_last < 1) keep_last = 1;
    ckptdir_choose(e, n, keep_last, keep_best, keep_upto);
    for (int i = 0; i < n; i++) {
        if (e[i].keep) continue;
        snprintf(linked, sizeof linked, "%s/%s", dir, e[i].file);
        if (unlink(linked) != 0 && errno != ENOENT && rc == 0) {
            snprintf(err, errlen, "%s: cannot remove %s: %s", dir, e[i].file, strerror(errno));
            rc = -1;
        }
    }
    free(e);
    return rc;
}

int ckptdir_before(const ckpt_entry_t *e, int n, long long before)
{
    int at = -1;
    for (int i = 0; i < n; i++)
        if (e[i].step >= 0 && e[i].step < before && (at < 0 || e[i].step > e[at].step)) at = i;
    return at;
}

/* Opens DIR/NAME.fence (created when absent) and takes its lock (LOCK_NB: without
 * waiting); reads the generation. Returns the descriptor, -2 when the lock is held
 * elsewhere (nb), or -1 with err. */
static int fence_open(const char *dir, const char *name, int nb, long long *gen, char *err, size_t errlen)
{
    char path[PATH_MAX], buf[32];
    if (snprintf(path, sizeof path, "%s/%s.fence", dir, name) >= (int)sizeof path) {
        snprintf(err, errlen, "%s: path too long", dir);
        return -1;
    }
    /* O_NOFOLLOW: the coordinator writes generations here; a link planted in a job's
     * checkpoint directory must not make it write somewhere else (ELOOP, refused) */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    while (flock(fd, LOCK_EX | (nb ? LOCK_NB : 0)) != 0) {
        if (errno == EINTR) continue;
        int busy = errno == EWOULDBLOCK;
        if (!busy) snprintf(err, errlen, "%s: cannot lock: %s", path, strerror(errno));
        close(fd);
        return busy ? -2 : -1;
    }
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    /* a full buffer: longer than any generation is written */
    if (n < 0 || n == (ssize_t)sizeof buf || ckptdir_fence_parse(buf, (size_t)n, gen) != 0) {
        snprintf(err, errlen, "%s: not a fence generation (at most %lld, in digits)", path, CKPTDIR_FENCE_MAX);
        close(fd);
        return -1;
    }
    return fd;
}

int ckptdir_fence_parse(const char *text, size_t len, long long *gen)
{
    long long v = 0;
    size_t i = 0;
    /* Digits, then an optional newline, nothing else; empty (a fresh file) is 0. */
    for (; i < len && text[i] >= '0' && text[i] <= '9'; i++) {
        v = v * 10 + (text[i] - '0');
        if (v > CKPTDIR_FENCE_MAX) return -1;
    }
    if (i < len && text[i] == '\n') i++;
    if (i != len) return -1;
    *gen = v;
    return 0;
}

int ckptdir_fence_read(const char *dir, const char *name, long long *gen, char *err, size_t errlen)
{
    int fd = fence_open(dir, name, 0, gen, err, errlen);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

int ckptdir_fence_raise(const char *dir, const char *name, long long gen, char *err, size_t errlen)
{
    long long cur;
    int fd = fence_open(dir, name, 1, &cur, err, errlen);
    if (fd == -2) return 1;
    if (fd < 0) return -1;
    int rc = 0;
    if (cur <= gen && gen < CKPTDIR_FENCE_MAX) {
        char buf[32];
        int n = snprintf(buf, sizeof buf, "%lld\n", gen + 1);
        /* In place, under the lock: a publisher reads it only while holding the lock. */
        if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)n, 0) != n || fsync(fd) != 0) {
            snprintf(err, errlen, "%s/%s.fence: cannot write: %s", dir, name, strerror(errno));
            rc = -1;
        }
    }
    char own[PATH_MAX];
    if (rc == 0 && ckptdir_fence_own(own, sizeof own, dir, name, gen) == 0) unlink(own);
    close(fd); /* releases the lock */
    return rc;
}

int ckptdir_fence_own(char *out, size_t len, const char *dir, const char *name, long long gen)
{
    int n = snprintf(out, len, "%s/%s.ckpt.fence%lld", dir, name, gen);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

int ckptdir_fence_enter(const char *dir, const char *name, long long gen, int *fd, char *err, size_t errlen)
{
    long long cur;
    *fd = fence_open(dir, name, 0, &cur, err, errlen);
    if (*fd < 0) return -1;
    if (cur == gen) return 0;
    snprintf(err, errlen,
             "checkpoint not published: %s/%s.fence says generation %lld, this attempt is %lld (the coordinator "
             "ended it)",
             dir, name, cur, gen);
    close(*fd);
    *fd = -1;
    return 1;
}

void ckptdir_fence_leave(int fd)
{
    if (fd >= 0) close(fd);
}
