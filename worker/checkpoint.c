/* worker/checkpoint.c - see checkpoint.h. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "fs.h"

/* Header fields after magic, version and header_bytes, written field by field (no struct
 * dump) so the format does not depend on the compiler's padding. */
#define HEADER_BYTES (MODEL_NAME_MAX + 2 * 8 + 4 * 8 + 8 + 16 + 8 + 8 + 8 + 4 + 4 * CKPT_MAX_WORKERS)

typedef struct { unsigned char *p; size_t len, cap; } wbuf_t;

static void put(wbuf_t *b, const void *src, size_t n)
{
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0) { if (errno == EINTR) continue; return -1; }
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

int checkpoint_save(const char *path, const model_t *m, const ckpt_state_t *st,
                    char *err, size_t errlen)
{
    int rc = -1, fd = -1;
    char tmp[1100], dir[1024];
    size_t bytes = 8 + 4 + 4 + HEADER_BYTES + (2 * m->nparams + m->nbuffers) * sizeof(float);
    wbuf_t b = { .p = malloc(bytes + 4), .cap = bytes + 4 };
    if (!b.p) { snprintf(err, errlen, "%s: out of memory", path); return -1; }

    snprintf(dir, sizeof dir, "%s", path);
    char *d = dirname(dir);
    if (fs_mkdir_p(d, 0755) != 0) {
        snprintf(err, errlen, "%s: cannot create directory %s: %s", path, d, strerror(errno));
        goto out;
    }

    uint32_t version = CKPT_VERSION, hdr = HEADER_BYTES;
    put(&b, CKPT_MAGIC, 8);
    put(&b, &version, 4);
    put(&b, &hdr, 4);
    char name[MODEL_NAME_MAX] = { 0 };
    snprintf(name, sizeof name, "%s", m->name);
    put(&b, name, sizeof name);
    uint64_t np = m->nparams, nb = m->nbuffers;
    put(&b, &np, 8);
    put(&b, &nb, 8);
    put(&b, &st->global_step, 8);
    put(&b, &st->epoch, 8);
    put(&b, &st->step_in_epoch, 8);
    put(&b, &st->cursor, 8);
    put(&b, &st->seed, 8);
    put(&b, st->aug_rng.s, 16);
    put(&b, &st->epoch_loss_sum, 8);
    put(&b, &st->epoch_loss_samples, 8);
    put(&b, &st->ps_version, 8);
    put(&b, &st->nworkers, 4);
    put(&b, st->batch_of, 4 * CKPT_MAX_WORKERS);
    put(&b, m->params, m->nparams * sizeof(float));
    put(&b, m->momentum, m->nparams * sizeof(float));
    put(&b, m->buffers, m->nbuffers * sizeof(float));
    uint32_t crc = (uint32_t)crc32(0L, b.p, (uInt)b.len);
    put(&b, &crc, 4);

    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        goto out;
    }
    if (write_all(fd, b.p, b.len) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", tmp, strerror(errno));
        goto out;
    }
    close(fd);
    fd = -1;
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "%s: rename from %s failed: %s", path, tmp, strerror(errno));
        goto out;
    }
    /* Make the rename itself durable. */
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) { fsync(dfd); close(dfd); }
    rc = 0;
out:
    if (fd >= 0) close(fd);
    if (rc != 0) unlink(tmp);
    free(b.p);
    return rc;
}

typedef struct { const unsigned char *p; size_t off; } rbuf_t;
static void get(rbuf_t *r, void *dst, size_t n) { memcpy(dst, r->p + r->off, n); r->off += n; }

int checkpoint_load(const char *path, model_t *m, ckpt_state_t *st, char *err, size_t errlen)
{
    int rc = -1;
    unsigned char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open checkpoint: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        goto out;
    }
    size_t len = (size_t)sb.st_size;
    if (len < 16 + 4) {
        snprintf(err, errlen, "%s: not a pacer checkpoint (only %zu bytes)", path, len);
        goto out;
    }
    buf = malloc(len);
    if (!buf || fread(buf, 1, len, f) != len) {
        snprintf(err, errlen, "%s: read failed", path);
        goto out;
    }
    if (memcmp(buf, CKPT_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a pacer checkpoint (bad magic)", path);
        goto out;
    }
    rbuf_t r = { .p = buf, .off = 8 };
    uint32_t version, hdr;
    get(&r, &version, 4);
    get(&r, &hdr, 4);
    if (version != CKPT_VERSION || hdr != HEADER_BYTES) {
        snprintf(err, errlen, "%s: unsupported checkpoint version %u (this build reads %u)",
                 path, version, CKPT_VERSION);
        goto out;
    }
    if (len < 16 + (size_t)HEADER_BYTES + 4) {
        snprintf(err, errlen, "%s: truncated checkpoint (%zu bytes)", path, len);
        goto out;
    }
    uint32_t crc_file;
    memcpy(&crc_file, buf + len - 4, 4);
    uint32_t crc = (uint32_t)crc32(0L, buf, (uInt)(len - 4));
    char name[MODEL_NAME_MAX];
    uint64_t np, nb;
    get(&r, name, sizeof name);
    name[MODEL_NAME_MAX - 1] = 0;
    get(&r, &np, 8);
    get(&r, &nb, 8);
    size_t want = 16 + (size_t)HEADER_BYTES + (2 * np + nb) * sizeof(float) + 4;
    if (np > ((size_t)1 << 40) || nb > ((size_t)1 << 40) || len != want) {
        snprintf(err, errlen, "%s: truncated or oversized checkpoint (%zu bytes, header says %zu)",
                 path, len, want);
        goto out;
    }
    if (crc != crc_file) {
        snprintf(err, errlen, "%s: checkpoint is corrupt (CRC32 %08x, stored %08x)", path, crc, crc_file);
        goto out;
    }
    if (strcmp(name, m->name) != 0 || np != m->nparams || nb != m->nbuffers) {
        snprintf(err, errlen, "%s: checkpoint is for model %s with %llu parameters, job runs %s with %zu",
                 path, name, (unsigned long long)np, m->name, m->nparams);
        goto out;
    }
    ckpt_state_t s;
    memset(&s, 0, sizeof s);
    get(&r, &s.global_step, 8);
    get(&r, &s.epoch, 8);
    get(&r, &s.step_in_epoch, 8);
    get(&r, &s.cursor, 8);
    get(&r, &s.seed, 8);
    get(&r, s.aug_rng.s, 16);
    get(&r, &s.epoch_loss_sum, 8);
    get(&r, &s.epoch_loss_samples, 8);
    get(&r, &s.ps_version, 8);
    get(&r, &s.nworkers, 4);
    get(&r, s.batch_of, 4 * CKPT_MAX_WORKERS);
    if (s.global_step < 0 || s.epoch < 0 || s.step_in_epoch < 0 || s.cursor < 0 ||
        s.nworkers < 0 || s.nworkers > CKPT_MAX_WORKERS) {
        snprintf(err, errlen, "%s: checkpoint header has invalid counters", path);
        goto out;
    }
    get(&r, m->params, m->nparams * sizeof(float));
    get(&r, m->momentum, m->nparams * sizeof(float));
    get(&r, m->buffers, m->nbuffers * sizeof(float));
    *st = s;
    rc = 0;
out:
    free(buf);
    fclose(f);
    return rc;
}
