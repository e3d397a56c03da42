/* common/npz.c - see npz.h. */
#include "npz.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zip.h>

#include "dataroot.h"
#include "hash.h"

/* Deflate's best case is 1032:1 (a run of one byte); a little slack for headers. */
#define DEFLATE_MAX_RATIO 1040u
#define NPZ_PATH_MAX 4096

struct npz {
    zip_t *za;
    char path[NPZ_PATH_MAX];
};

int npz_open(const char *path, npz_t **out, char *err, size_t errlen)
{
    *out = NULL;
    npz_t *z = calloc(1, sizeof *z);
    if (!z) return errmsg(err, errlen, "%s: out of memory", path);
    snprintf(z->path, sizeof z->path, "%s", path);
    int code = 0;
    /* Opened here, not by libzip: what the descriptor reached is checked against the data
     * roots (common/dataroot.h) before a byte is read, so a link out of them (pw.npz ->
     * /etc/passwd) is refused by name, not probed, and a FIFO never hangs the open. */
    int fd = dataroot_open(path, err, errlen);
    if (fd < 0) {
        free(z);
        return -1;
    }
    /* ZIP_CHECKCONS: the central directory must agree with the local headers. zip_fdopen
     * closes fd on success (it reads a dup) and leaves it open on failure. */
    z->za = zip_fdopen(fd, ZIP_RDONLY | ZIP_CHECKCONS, &code);
    if (!z->za) {
        close(fd);
        zip_error_t ze;
        zip_error_init_with_code(&ze, code);
        if (code == ZIP_ER_NOZIP)
            errmsg(err, errlen, "%s: not a zip archive (an .npz is one: np.savez or np.savez_compressed)", path);
        else if (code == ZIP_ER_NOENT) errmsg(err, errlen, "%s: no such file", path);
        else errmsg(err, errlen, "%s: cannot open the archive: %s", path, zip_error_strerror(&ze));
        zip_error_fini(&ze);
        free(z);
        return -1;
    }
    *out = z;
    return 0;
}

void npz_close(npz_t *z)
{
    if (!z) return;
    zip_discard(z->za); /* read-only: nothing to write back */
    free(z);
}

const char *npz_path(const npz_t *z) { return z->path; }

static zip_int64_t locate(npz_t *z, const char *name)
{
    char member[64];
    snprintf(member, sizeof member, "%s.npy", name);
    return zip_name_locate(z->za, member, 0);
}

int npz_has(npz_t *z, const char *name) { return locate(z, name) >= 0; }

/* Reads exactly n bytes (fewer only at the member's end: *got says). */
static int read_some(npz_t *z, const char *name, zip_file_t *f, void *dst, uint64_t n, uint64_t *got, char *err,
                     size_t errlen)
{
    *got = 0;
    while (*got < n) {
        uint64_t want = n - *got;
        if (want > (1u << 30)) want = 1u << 30;
        zip_int64_t k = zip_fread(f, (uint8_t *)dst + *got, want);
        if (k < 0) return errmsg(err, errlen, "%s: %s: %s", z->path, name, zip_error_strerror(zip_file_get_error(f)));
        if (k == 0) break;
        *got += (uint64_t)k;
    }
    return 0;
}

int npz_array_open(npz_t *z, const char *name, npz_array_t *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    snprintf(a->name, sizeof a->name, "%s", name);
    zip_int64_t idx = locate(z, name);
    if (idx < 0)
        return errmsg(err, errlen, "%s: no array '%s' (an .npz for pacer holds x_train, y_train, x_test, y_test)",
                      z->path, name);
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(z->za, (zip_uint64_t)idx, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE) ||
        !(st.valid & ZIP_STAT_COMP_SIZE) || !(st.valid & ZIP_STAT_COMP_METHOD))
        return errmsg(err, errlen, "%s: %s: cannot read its entry: %s", z->path, name, zip_strerror(z->za));
    if (!zip_compression_method_supported(st.comp_method, 0))
        return errmsg(err, errlen, "%s: %s: compression method %d is not supported (np.savez_compressed writes deflate)",
                      z->path, name, (int)st.comp_method);
    uint64_t limit = st.comp_method == ZIP_CM_STORE ? st.comp_size : st.comp_size * DEFLATE_MAX_RATIO + 1024;
    if (st.size > limit)
        return errmsg(err, errlen, "%s: %s: announces %llu bytes from %llu compressed: more than the method can hold",
                      z->path, name, (unsigned long long)st.size, (unsigned long long)st.comp_size);
    a->member_bytes = st.size;

    zip_file_t *f = zip_fopen_index(z->za, (zip_uint64_t)idx, 0);
    if (!f) return errmsg(err, errlen, "%s: %s: cannot open: %s", z->path, name, zip_strerror(z->za));
    a->file = f;
    /* The preamble first, then as much header as it announces. */
    uint8_t *hdr = malloc(NPY_PREAMBLE_MAX + NPY_HEADER_MAX);
    if (!hdr) goto oom;
    uint64_t got = 0, more = 0;
    char msg[256];
    if (read_some(z, name, f, hdr, NPY_PREAMBLE_MAX, &got, err, errlen) < 0) goto bad;
    size_t need = npy_header_size(hdr, (size_t)got);
    if (need > got && read_some(z, name, f, hdr + got, need - got, &more, err, errlen) < 0) goto bad;
    got += more;
    if (npy_parse_header(hdr, (size_t)got, &a->h, msg, sizeof msg) < 0) {
        errmsg(err, errlen, "%s: %s: %s", z->path, name, msg);
        goto bad;
    }
    if (got != a->h.data_offset) {
        /* The preamble read went past a header shorter than NPY_PREAMBLE_MAX: impossible for
         * a valid header (the preamble alone is 10 or 12 bytes), so the member is damaged. */
        errmsg(err, errlen, "%s: %s: header length does not match its preamble", z->path, name);
        goto bad;
    }
    uint64_t want = (uint64_t)a->h.data_offset + a->h.nbytes;
    if (want != a->member_bytes) {
        errmsg(err, errlen, "%s: %s: %s: shape %s announces %llu bytes of data, the member holds %llu", z->path, name,
               want > a->member_bytes ? "truncated" : "trailing data", a->h.descr, (unsigned long long)a->h.nbytes,
               (unsigned long long)(a->member_bytes - a->h.data_offset));
        goto bad;
    }
    free(hdr);
    return 0;
oom:
    errmsg(err, errlen, "%s: %s: out of memory", z->path, name);
bad:
    free(hdr);
    npz_array_close(a);
    return -1;
}

int npz_array_read_part(npz_t *z, npz_array_t *a, void *dst, uint64_t n, char *err, size_t errlen)
{
    uint64_t got = 0;
    if (!a->file) return errmsg(err, errlen, "%s: %s: not open", z->path, a->name);
    if (n > a->h.nbytes - a->done)
        return errmsg(err, errlen, "%s: %s: %llu bytes asked past the array's end", z->path, a->name,
                      (unsigned long long)n);
    if (read_some(z, a->name, a->file, dst, n, &got, err, errlen) < 0) return -1;
    a->done += got;
    if (got < n)
        return errmsg(err, errlen, "%s: %s: truncated: %llu bytes of data announced, %llu in the archive", z->path,
                      a->name, (unsigned long long)a->h.nbytes, (unsigned long long)a->done);
    return 0;
}

int npz_array_finish(npz_t *z, npz_array_t *a, char *err, size_t errlen)
{
    zip_file_t *f = a->file;
    if (!f) return errmsg(err, errlen, "%s: %s: not open", z->path, a->name);
    if (a->done != a->h.nbytes)
        return errmsg(err, errlen, "%s: %s: %llu of %llu bytes read", z->path, a->name, (unsigned long long)a->done,
                      (unsigned long long)a->h.nbytes);
    /* One more read meets the end of the member, where libzip checks the CRC-32. */
    uint8_t extra;
    zip_int64_t k = zip_fread(f, &extra, 1);
    if (k < 0) return errmsg(err, errlen, "%s: %s: %s", z->path, a->name, zip_error_strerror(zip_file_get_error(f)));
    if (k > 0) return errmsg(err, errlen, "%s: %s: trailing data after the array", z->path, a->name);
    return 0;
}

int npz_array_read(npz_t *z, npz_array_t *a, void *dst, char *err, size_t errlen)
{
    if (npz_array_read_part(z, a, dst, a->h.nbytes, err, errlen) < 0) return -1;
    return npz_array_finish(z, a, err, errlen);
}

void npz_array_close(npz_array_t *a)
{
    if (a->file) zip_fclose(a->file);
    a->file = NULL;
}

uint64_t npz_fingerprint(npz_t *z)
{
    uint64_t h = HASH_FNV1A_INIT;
    zip_int64_t n = zip_get_num_entries(z->za, 0);
    h = hash_fnv1a(h, &n, sizeof n);
    for (zip_int64_t i = 0; i < n; i++) {
        zip_stat_t st;
        zip_stat_init(&st);
        if (zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) != 0) continue;
        if (st.valid & ZIP_STAT_NAME) h = hash_fnv1a(h, st.name, strlen(st.name) + 1);
        uint64_t f[3] = {st.size, (uint64_t)st.comp_method, st.crc};
        h = hash_fnv1a(h, f, sizeof f);
    }
    return h;
}
