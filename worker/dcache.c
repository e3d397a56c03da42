/* worker/dcache.c - see dcache.h. */
#include "dcache.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fs.h"

#define PAGE 4096u
static const char MAGIC[8] = {'P', 'A', 'C', 'E', 'R', 'D', 'C', '1'};

/* ---- layout ---------------------------------------------------------------------------- */

static uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* Bytes from a region's start to its labels. */
static uint64_t labels_at(int n, int C, int H, int W) { return align_up((uint64_t)n * C * H * W, 8); }

uint64_t dcache_region_bytes(int n, int C, int H, int W)
{
    if (n < 0 || C < 1 || H < 1 || W < 1 || C > DCACHE_MAX_CHANNELS || H > DCACHE_MAX_SIDE || W > DCACHE_MAX_SIDE)
        return UINT64_MAX;
    /* n < 2^31 and C*H*W < 2^30: the product stays below 2^61 */
    return labels_at(n, C, H, W) + 4ull * (uint64_t)n;
}

int dcache_layout(dcache_header_t *h)
{
    uint64_t r0 = dcache_region_bytes(h->n[0], h->C, h->H, h->W);
    uint64_t r1 = dcache_region_bytes(h->n[1], h->C, h->H, h->W);
    if (r0 == UINT64_MAX || r1 == UINT64_MAX) return -1;
    h->offset[0] = DCACHE_HEADER_BYTES;
    h->offset[1] = align_up(h->offset[0] + r0, PAGE);
    h->file_bytes = h->offset[1] + r1;
    return 0;
}

/* ---- header ---------------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static double getf64(const uint8_t *p)
{
    double v;
    memcpy(&v, p, 8);
    return v;
}

void dcache_header_write(const dcache_header_t *h, uint8_t buf[DCACHE_HEADER_BYTES])
{
    memset(buf, 0, DCACHE_HEADER_BYTES);
    memcpy(buf, MAGIC, 8);
    put32(buf + 8, DCACHE_VERSION);
    put32(buf + 12, DCACHE_HEADER_BYTES);
    put64(buf + 16, h->key);
    put64(buf + 24, h->fingerprint);
    put32(buf + 32, (uint32_t)h->C);
    put32(buf + 36, (uint32_t)h->H);
    put32(buf + 40, (uint32_t)h->W);
    put32(buf + 44, (uint32_t)h->classes);
    put32(buf + 48, (uint32_t)h->n[0]);
    put32(buf + 52, (uint32_t)h->n[1]);
    put64(buf + 56, h->offset[0]);
    put64(buf + 64, h->offset[1]);
    put64(buf + 72, h->file_bytes);
    for (int c = 0; c < DCACHE_MAX_CHANNELS; c++) {
        memcpy(buf + 80 + 8 * c, &h->mean[c], 8);
        memcpy(buf + 104 + 8 * c, &h->std[c], 8);
    }
    snprintf((char *)buf + 128, DCACHE_SOURCE_MAX, "%s", h->source);
    put32(buf + DCACHE_HEADER_BYTES - 4, (uint32_t)crc32(0L, buf, DCACHE_HEADER_BYTES - 4));
}

int dcache_header_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, dcache_header_t *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (len < DCACHE_HEADER_BYTES) return errmsg(err, errlen, "%zu bytes: shorter than a header", len);
    if (memcmp(buf, MAGIC, 8) != 0) return errmsg(err, errlen, "not a pacer data cache (magic)");
    if (get32(buf + 8) != DCACHE_VERSION)
        return errmsg(err, errlen, "version %u (this worker writes %d)", get32(buf + 8), DCACHE_VERSION);
    if (get32(buf + 12) != DCACHE_HEADER_BYTES) return errmsg(err, errlen, "header size %u", get32(buf + 12));
    uint32_t crc = (uint32_t)crc32(0L, buf, DCACHE_HEADER_BYTES - 4);
    if (get32(buf + DCACHE_HEADER_BYTES - 4) != crc) return errmsg(err, errlen, "header CRC mismatch");
    uint32_t C = get32(buf + 32), H = get32(buf + 36), W = get32(buf + 40), K = get32(buf + 44);
    uint32_t n0 = get32(buf + 48), n1 = get32(buf + 52);
    if (C < 1 || C > DCACHE_MAX_CHANNELS || H < 1 || H > DCACHE_MAX_SIDE || W < 1 || W > DCACHE_MAX_SIDE)
        return errmsg(err, errlen, "shape %ux%ux%u out of bounds", C, H, W);
    if (K < 1 || K > DCACHE_MAX_CLASSES) return errmsg(err, errlen, "%u classes", K);
    if (n0 < 1 || n0 > INT32_MAX || n1 < 1 || n1 > INT32_MAX)
        return errmsg(err, errlen, "%u training and %u test samples", n0, n1);
    out->key = get64(buf + 16);
    out->fingerprint = get64(buf + 24);
    out->C = (int)C, out->H = (int)H, out->W = (int)W, out->classes = (int)K;
    out->n[0] = (int)n0, out->n[1] = (int)n1;
    dcache_header_t want = *out;
    if (dcache_layout(&want) != 0) return errmsg(err, errlen, "sizes overflow");
    for (int s = 0; s < 2; s++) {
        out->offset[s] = get64(buf + 56 + 8 * s);
        if (out->offset[s] != want.offset[s])
            return errmsg(err, errlen, "split %d at offset %llu, want %llu", s, (unsigned long long)out->offset[s],
                          (unsigned long long)want.offset[s]);
    }
    out->file_bytes = get64(buf + 72);
    if (out->file_bytes != want.file_bytes || out->file_bytes != file_bytes)
        return errmsg(err, errlen, "file of %llu bytes, header says %llu, layout %llu", (unsigned long long)file_bytes,
                      (unsigned long long)out->file_bytes, (unsigned long long)want.file_bytes);
    for (int c = 0; c < DCACHE_MAX_CHANNELS; c++) {
        out->mean[c] = getf64(buf + 80 + 8 * c);
        out->std[c] = getf64(buf + 104 + 8 * c);
        if (!(out->mean[c] >= 0 && out->mean[c] <= 1) || !(out->std[c] > 0 && out->std[c] <= 1))
            return errmsg(err, errlen, "channel %d statistics out of range", c);
    }
    const char *src = (const char *)buf + 128;
    if (!memchr(src, 0, DCACHE_SOURCE_MAX)) return errmsg(err, errlen, "source name not terminated");
    memcpy(out->source, src, strlen(src) + 1);
    return 0;
}

int dcache_path(const char *dir, const char *name, uint64_t key, char *out, size_t len)
{
    char clean[64];
    size_t k = 0;
    for (const char *p = name; *p && k + 1 < sizeof clean; p++) {
        unsigned char ch = (unsigned char)*p;
        int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '.' ||
                 ch == '_' || ch == '-';
        clean[k++] = ok ? (char)ch : '_';
    }
    clean[k] = 0;
    int n = snprintf(out, len, "%s/%s-%016llx.pdc", dir, k ? clean : "data", (unsigned long long)key);
    return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* ---- reading --------------------------------------------------------------------------- */

void dcache_split_free(dcache_split_t *s)
{
    if (s->map) munmap(s->map, s->map_len);
    memset(s, 0, sizeof *s);
}

/* Maps one split's region; MAP_POPULATE reads it in now, so that a training step never
 * waits for a page fault to read the file. */
static int map_split(int fd, const dcache_header_t *h, int s, dcache_split_t *out)
{
    uint64_t len = dcache_region_bytes(h->n[s], h->C, h->H, h->W);
    void *p = mmap(NULL, (size_t)len, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, (off_t)h->offset[s]);
    if (p == MAP_FAILED) return -1;
    out->map = p;
    out->map_len = (size_t)len;
    out->pixels = p;
    out->labels = (int32_t *)((uint8_t *)p + labels_at(h->n[s], h->C, h->H, h->W));
    return 0;
}

int dcache_open(const char *path, uint64_t key, uint64_t fingerprint, dcache_header_t *h, dcache_split_t split[2],
                char *why, size_t whylen)
{
    uint8_t buf[DCACHE_HEADER_BYTES];
    char msg[256];
    struct stat st;
    int rc = 0;
    memset(split, 0, 2 * sizeof *split);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) errmsg(why, whylen, "no cache yet");
        else errmsg(why, whylen, "%s: %s", path, strerror(errno));
        return 0;
    }
    ssize_t got = fstat(fd, &st) == 0 ? pread(fd, buf, sizeof buf, 0) : -1;
    if (got < 0) {
        errmsg(why, whylen, "%s: cannot read: %s", path, strerror(errno));
        goto out;
    }
    if (dcache_header_parse(buf, (size_t)got, (uint64_t)st.st_size, h, msg, sizeof msg) != 0) {
        errmsg(why, whylen, "%s: damaged (%s)", path, msg);
        goto out;
    }
    if (h->key != key || h->fingerprint != fingerprint) {
        errmsg(why, whylen, "%s: stale (%s changed)", path, h->key != key ? "what was asked" : "the source");
        goto out;
    }
    if (map_split(fd, h, 0, &split[0]) != 0 || map_split(fd, h, 1, &split[1]) != 0) {
        errmsg(why, whylen, "%s: cannot map: %s", path, strerror(errno));
        rc = -1;
        goto out;
    }
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < h->n[s]; i++)
            if (split[s].labels[i] < 0 || split[s].labels[i] >= h->classes) {
                errmsg(why, whylen, "%s: damaged (label %d of %s sample %d, %d classes)", path, (int)split[s].labels[i],
                       s ? "test" : "training", i, h->classes);
                goto out;
            }
    rc = 1;
out:
    close(fd);
    if (rc != 1) {
        dcache_split_free(&split[0]);
        dcache_split_free(&split[1]);
    }
    return rc;
}

/* ---- building -------------------------------------------------------------------------- */

int dcache_lock(const char *path, char *err, size_t errlen)
{
    char lock[4200];
    snprintf(lock, sizeof lock, "%s.lock", path);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errmsg(err, errlen, "%s: cannot create: %s", lock, strerror(errno));
    while (flock(fd, LOCK_EX) != 0) {
        if (errno == EINTR) continue;
        errmsg(err, errlen, "%s: cannot lock: %s", lock, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

void dcache_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing releases the flock */
}

int dcache_build_begin(dcache_build_t *b, const dcache_header_t *h, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    b->h = *h;
    if (dcache_layout(&b->h) != 0) return errmsg(err, errlen, "data set too large for the cache layout");
    if (!path) {
        for (int s = 0; s < 2; s++) {
            uint64_t len = dcache_region_bytes(b->h.n[s], b->h.C, b->h.H, b->h.W);
            void *p = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (p == MAP_FAILED) {
                dcache_build_abort(b);
                return errmsg(err, errlen, "out of memory for the decoded data (%llu bytes)", (unsigned long long)len);
            }
            b->anon[s] = p;
            b->anon_len[s] = (size_t)len;
            b->pixels[s] = p;
            b->labels[s] = (int32_t *)((uint8_t *)p + labels_at(b->h.n[s], b->h.C, b->h.H, b->h.W));
        }
        return 0;
    }
    snprintf(b->path, sizeof b->path, "%s", path);
    b->fd = fs_atomic_begin(path, b->tmp, sizeof b->tmp, 0644);
    if (b->fd < 0) return errmsg(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    /* Blocks reserved now (not a sparse ftruncate): a full disk is an error here, where a
     * store into a mapping of a sparse file would raise SIGBUS later. */
    int e = posix_fallocate(b->fd, 0, (off_t)b->h.file_bytes);
    if (e != 0) {
        errmsg(err, errlen, "%s: cannot reserve %llu bytes: %s", b->tmp, (unsigned long long)b->h.file_bytes,
               strerror(e));
        dcache_build_abort(b);
        return -1;
    }
    void *p = mmap(NULL, (size_t)b->h.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, b->fd, 0);
    if (p == MAP_FAILED) {
        errmsg(err, errlen, "%s: cannot map: %s", b->tmp, strerror(errno));
        dcache_build_abort(b);
        return -1;
    }
    b->base = p;
    for (int s = 0; s < 2; s++) {
        b->pixels[s] = b->base + b->h.offset[s];
        b->labels[s] = (int32_t *)(b->pixels[s] + labels_at(b->h.n[s], b->h.C, b->h.H, b->h.W));
    }
    return 0;
}

int dcache_build_commit(dcache_build_t *b, dcache_split_t split[2], char *err, size_t errlen)
{
    memset(split, 0, 2 * sizeof *split);
    if (b->fd < 0) {
        for (int s = 0; s < 2; s++) {
            split[s].map = b->anon[s];
            split[s].map_len = b->anon_len[s];
            split[s].pixels = b->pixels[s];
            split[s].labels = b->labels[s];
            /* read-only from here on, like a mapped cache */
            mprotect(b->anon[s], b->anon_len[s], PROT_READ);
            b->anon[s] = NULL;
        }
        return 0;
    }
    dcache_header_write(&b->h, b->base);
    /* msync reports a write-back error (an I/O error of the disk) here. */
    int bad = msync(b->base, (size_t)b->h.file_bytes, MS_SYNC) != 0;
    int e = errno;
    munmap(b->base, (size_t)b->h.file_bytes);
    b->base = NULL;
    if (bad) {
        fs_atomic_abort(b->fd, b->tmp);
        b->fd = -1;
        return errmsg(err, errlen, "%s: cannot write: %s", b->tmp, strerror(e));
    }
    /* The pages just written are on disk now (msync) and mapped nowhere: drop them from
     * the page cache, so that dcache_open reads the file back. The build wrote them one
     * 4 KiB page at a time through its mapping, and as such they stay in the page cache:
     * scattered small pages that every later mapping maps with 4 KiB entries, which made
     * a gather from the cache 2.8 times slower than from IDX's malloc'ed pixels (the
     * address translation of a random sample, not the copy, measured on the development
     * VM). Read back, readahead brings the file in as large folios (ext4, Linux 6.x) that
     * the read-only mapping maps with 2 MiB entries (FilePmdMapped in /proc/PID/smaps):
     * the cache's gather is then as fast as IDX's. Costs one read of the file, once per
     * build; advisory, so a kernel that keeps the pages only loses the speed-up. */
    posix_fadvise(b->fd, 0, 0, POSIX_FADV_DONTNEED);
    int rc = fs_atomic_commit(b->fd, b->tmp, b->path);
    b->fd = -1;
    if (rc != 0) return errmsg(err, errlen, "%s: cannot commit: %s", b->path, strerror(errno));
    return 0;
}

void dcache_build_abort(dcache_build_t *b)
{
    if (b->base) munmap(b->base, (size_t)b->h.file_bytes);
    if (b->fd >= 0) fs_atomic_abort(b->fd, b->tmp);
    for (int s = 0; s < 2; s++)
        if (b->anon[s]) munmap(b->anon[s], b->anon_len[s]);
    memset(b, 0, sizeof *b);
    b->fd = -1;
}

void dcache_build_release(dcache_build_t *b, int s, uint64_t bytes)
{
    if (!b->base) return;
    /* offset[s] is page-aligned (dcache_layout) */
    uint64_t len = bytes / PAGE * PAGE;
    if (len) madvise(b->base + b->h.offset[s], (size_t)len, MADV_DONTNEED);
}

int dcache_usage(const char *path, dcache_usage_t *u)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f) return -1;
    char line[4608];
    int in = 0;
    memset(u, 0, sizeof *u);
    size_t plen = strlen(path);
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, inode;
        char perms[8];
        long kb;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %lu", &lo, &hi, perms, &inode) == 4) {
            /* a mapping's first line; the path is its last field */
            size_t n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == ' ')) line[--n] = 0;
            in = n >= plen && strcmp(line + n - plen, path) == 0 && (n == plen || line[n - plen - 1] == ' ');
            if (in) u->mappings++, u->inode = inode;
        } else if (in && sscanf(line, "Rss: %ld kB", &kb) == 1) {
            u->rss_kb += kb;
        } else if (in && sscanf(line, "Pss: %ld kB", &kb) == 1) {
            u->pss_kb += kb;
        }
    }
    fclose(f);
    return 0;
}
