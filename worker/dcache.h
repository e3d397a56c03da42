/* worker/dcache.h - the decoded cache: a data set's images decoded and preprocessed once
 * (uint8, the model's C x H x W layout) in one file that every later job and every rank
 * of a host maps read-only, so that 8 ranks of a host (or 128 simulated ranks in one
 * process) hold one copy in the page cache instead of eight.
 *
 * File layout (little-endian; DCACHE_HEADER_BYTES of header, then one region per split,
 * each starting at a page boundary so that a split can be mapped on its own):
 *
 *   0     "PACERDC1"                magic
 *   8     u32 version (1), u32 header bytes (4096)
 *   16    u64 key                   what was asked for: source path, format, shape, resize,
 *                                   layout (worker/dsload.c computes it)
 *   24    u64 fingerprint           the source as it was: file list, sizes and modification
 *                                   times of an image folder; member CRCs of an .npz
 *   32    u32 C, H, W, classes
 *   48    u32 train samples, test samples
 *   56    u64 train offset, test offset, file bytes
 *   80    f64 mean[3], std[3]       the training split's per-channel statistics, [0, 1] scale
 *   128   char source[512]          the source path, NUL-terminated (for people)
 *   4092  u32 CRC-32 of bytes 0 .. 4092
 *   region: n x C x H x W pixels, zero padding to a multiple of 8, n int32 labels
 *
 * The file is written through a temporary file and a rename (common/fs.h), so a reader
 * sees a complete cache or none; its content is not checksummed (the header is), since
 * that would mean reading gigabytes at every start. A cache whose key or fingerprint
 * differs from the source's is stale and is rebuilt; a header that fails any check is
 * treated the same way, with the reason on stderr.
 *
 * Builders on one host take an exclusive flock on PATH.lock, so that of several jobs or
 * ranks starting together one decodes and the others wait, then map its result.
 */
#ifndef PACER_DCACHE_H
#define PACER_DCACHE_H

#include <stddef.h>
#include <stdint.h>

#define DCACHE_HEADER_BYTES 4096
#define DCACHE_VERSION 1
#define DCACHE_MAX_CHANNELS 3
#define DCACHE_MAX_SIDE 16384
#define DCACHE_MAX_CLASSES 65536
#define DCACHE_SOURCE_MAX 512

typedef struct {
    uint64_t key, fingerprint;
    int C, H, W, classes;
    int n[2];            /* samples: [0] train, [1] test */
    uint64_t offset[2];  /* where each split's region starts */
    uint64_t file_bytes; /* the whole file */
    double mean[DCACHE_MAX_CHANNELS], std[DCACHE_MAX_CHANNELS];
    char source[DCACHE_SOURCE_MAX];
} dcache_header_t;

/* One split mapped read-only: pixels (n, C, H, W) and labels (n) inside map. */
typedef struct {
    uint8_t *pixels;
    int32_t *labels;
    void *map;
    size_t map_len;
} dcache_split_t;

/* A cache being built: the file's mapping (writable), or anonymous memory per split when
 * no cache file can be written. */
typedef struct {
    dcache_header_t h;
    uint8_t *pixels[2];
    int32_t *labels[2];
    int fd;        /* the temporary file; -1 when building in memory */
    uint8_t *base; /* its mapping */
    void *anon[2]; /* in-memory splits */
    size_t anon_len[2];
    char tmp[4200], path[4096];
} dcache_build_t;

/* Bytes of one split's region: pixels, padding to 8, labels. UINT64_MAX on overflow. */
uint64_t dcache_region_bytes(int n, int C, int H, int W);
/* Fills h->offset and h->file_bytes from h's counts and shape. Returns -1 when the sizes
 * overflow. */
int dcache_layout(dcache_header_t *h);

/* Parses and checks a header read from a file of file_bytes bytes: magic, version, CRC,
 * shape and counts within bounds, regions where the layout puts them and inside the
 * file, statistics finite (mean in [0, 1], std in (0, 1]). Returns 0, or -1 with err
 * saying what is wrong. Key and fingerprint are the caller's to compare. */
int dcache_header_parse(const uint8_t *buf, size_t len, uint64_t file_bytes, dcache_header_t *out, char *err,
                        size_t errlen);
/* Serialises h (CRC included) into buf. */
void dcache_header_write(const dcache_header_t *h, uint8_t buf[DCACHE_HEADER_BYTES]);

/* DIR/NAME-KEY.pdc, NAME reduced to [A-Za-z0-9._-]. Returns 0, -1 when it does not fit. */
int dcache_path(const char *dir, const char *name, uint64_t key, char *out, size_t len);

/* Maps the cache at path when its header is valid and carries key and fingerprint, and
 * every label is below classes: returns 1 with both splits mapped. Returns 0 when there
 * is no usable cache (missing, stale, damaged: why says which), -1 on an error that a
 * rebuild would not cure (cannot map). */
int dcache_open(const char *path, uint64_t key, uint64_t fingerprint, dcache_header_t *h, dcache_split_t split[2],
                char *why, size_t whylen);
void dcache_split_free(dcache_split_t *s);

/* Exclusive lock for building path (flock on PATH.lock, created as needed); blocks until
 * it is ours. Returns the lock's descriptor, or -1 with err. dcache_unlock releases. */
int dcache_lock(const char *path, char *err, size_t errlen);
void dcache_unlock(int fd);

/* Starts building a cache with h's shape and counts (offsets filled here): into a
 * temporary file beside path (path not NULL), else in memory. The caller writes pixels
 * and labels, sets h.mean/std, then commits or aborts. */
int dcache_build_begin(dcache_build_t *b, const dcache_header_t *h, const char *path, char *err, size_t errlen);
/* File: writes the header, syncs, renames over path (b is then finished: map the file
 * with dcache_open). Memory: hands the two splits over into split[]. */
int dcache_build_commit(dcache_build_t *b, dcache_split_t split[2], char *err, size_t errlen);
void dcache_build_abort(dcache_build_t *b);
/* File: the first `bytes` bytes of split s's pixels are written; their whole pages leave
 * this process's mapping (madvise MADV_DONTNEED of a shared file mapping: the dirty pages
 * stay in the page cache, commit's msync writes them), so that the builder's resident
 * size stays at a chunk, not at the data set. Memory builds: nothing. */
void dcache_build_release(dcache_build_t *b, int s, uint64_t bytes);

/* How much of the cache file at path this process has mapped, from /proc/self/smaps:
 * the mappings of that file, their resident size and their proportional share (Pss: each
 * page divided by the number of processes that map it, so two ranks sharing every page
 * show Pss = Rss / 2), and the inode they map (the last one seen; meaningless without a mapping),
 * which tells one file from another of the same name. */
typedef struct {
    int mappings;
    long rss_kb, pss_kb;
    unsigned long inode;
} dcache_usage_t;

/* Fills u for the file at path. Returns 0, or -1 when smaps cannot be read. Reads a /proc
 * file: for the summary, never inside a training step. */
int dcache_usage(const char *path, dcache_usage_t *u);

#endif
