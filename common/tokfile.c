/* common/tokfile.c - see tokfile.h. */
#include "tokfile.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dataroot.h"
#include "errmsg.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int tokfile_layout(const uint8_t *head, size_t headlen, uint64_t file_bytes, int width, const char *path,
                   tokfile_layout_t *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->width = width;
    if (file_bytes == 0) return errmsg(err, errlen, "%s: empty file (no tokens)", path);
    if (width == 1) {
        out->ntokens = file_bytes;
        return 0;
    }
    if (width != 2) return errmsg(err, errlen, "%s: token width %d (1 or 2)", path, width);
    if (headlen >= 4 && le32(head) == TOKFILE_MAGIC) {
        if (headlen < 12 || file_bytes < TOKFILE_HEADER_BYTES)
            return errmsg(err, errlen, "%s: llm.c header (magic %d) cut short: %llu bytes, the header is %d", path,
                          TOKFILE_MAGIC, (unsigned long long)file_bytes, TOKFILE_HEADER_BYTES);
        const uint32_t version = le32(head + 4), count = le32(head + 8);
        if (version != TOKFILE_VERSION)
            return errmsg(err, errlen, "%s: llm.c header version %u (this reader takes version %d: uint16 ids)", path,
                          version, TOKFILE_VERSION);
        const uint64_t body = file_bytes - TOKFILE_HEADER_BYTES;
        if (body % 2 != 0 || body / 2 != count)
            return errmsg(err, errlen, "%s: header says %u tokens, the file holds %llu byte%s after it (%s%llu tokens)",
                          path, count, (unsigned long long)body, body == 1 ? "" : "s",
                          body % 2 ? "an odd count, not " : "", (unsigned long long)(body / 2));
        if (count == 0) return errmsg(err, errlen, "%s: header says 0 tokens", path);
        out->offset = TOKFILE_HEADER_BYTES;
        out->ntokens = count;
        out->header = 1;
        return 0;
    }
    if (file_bytes % 2 != 0)
        return errmsg(err, errlen, "%s: %llu bytes, an odd count: not uint16 token ids (no llm.c header: magic %d)",
                      path, (unsigned long long)file_bytes, TOKFILE_MAGIC);
    out->ntokens = file_bytes / 2;
    return 0;
}

int tokfile_check_ids(const uint8_t *ids, uint64_t n, int vocab, const char *path, int *max_id, char *err, size_t errlen)
{
    unsigned top = 0;
    for (uint64_t i = 0; i < n; i++) {
        const unsigned id = (unsigned)ids[2 * i] | (unsigned)ids[2 * i + 1] << 8;
        if (id >= (unsigned)vocab)
            return errmsg(err, errlen, "%s: id %u at token %llu is outside the vocabulary (vocab_size %d)", path, id,
                          (unsigned long long)i, vocab);
        if (id > top) top = id;
    }
    if (max_id) *max_id = (int)top;
    return 0;
}

static int cmp_path(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Whether name is PREFIX_*.bin (something between the underscore and the extension). */
static int is_shard(const char *name, const char *split)
{
    const size_t n = strlen(name), k = strlen(split);
    return n > k + 5 && strncmp(name, split, k) == 0 && name[k] == '_' && strcmp(name + n - 4, ".bin") == 0;
}

static int set_path(char *out, const char *dir, const char *name, char *err, size_t errlen)
{
    if ((size_t)snprintf(out, TOKFILE_PATH_MAX, "%s/%s", dir, name) >= TOKFILE_PATH_MAX)
        return errmsg(err, errlen, "%s: path longer than %d bytes", dir, TOKFILE_PATH_MAX - 1);
    return 0;
}

int tokfile_split_files(const char *dir, const char *split, int width, char (*paths)[TOKFILE_PATH_MAX], char *err,
                        size_t errlen)
{
    char one[64];
    struct stat st;
    snprintf(one, sizeof one, "%s.%s", split, width == 1 ? "txt" : "bin");
    if (set_path(paths[0], dir, one, err, errlen) != 0) return -1;
    if (stat(paths[0], &st) == 0) return 1;
    if (width == 1) return errmsg(err, errlen, "%s: %s", paths[0], strerror(errno));
    DIR *d = opendir(dir);
    if (!d) return errmsg(err, errlen, "%s: %s", dir, strerror(errno));
    int n = 0, rc = 0;
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (!is_shard(e->d_name, split)) continue;
        if (n == TOKFILE_MAX_SHARDS)
            rc = errmsg(err, errlen, "%s: more than %d files %s_*.bin", dir, TOKFILE_MAX_SHARDS, split);
        else rc = set_path(paths[n++], dir, e->d_name, err, errlen);
    }
    closedir(d);
    if (rc != 0) return -1;
    if (n == 0) return errmsg(err, errlen, "%s: neither %s nor %s_*.bin", dir, one, split);
    qsort(paths, (size_t)n, TOKFILE_PATH_MAX, cmp_path);
    return n;
}

int tokfile_fd_layout(int fd, const char *path, int width, tokfile_layout_t *out, char *err, size_t errlen)
{
    struct stat st;
    uint8_t head[TOKFILE_HEADER_BYTES];
    if (fstat(fd, &st) != 0) return errmsg(err, errlen, "%s: %s", path, strerror(errno));
    const ssize_t got = pread(fd, head, sizeof head, 0);
    if (got < 0) return errmsg(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    return tokfile_layout(head, (size_t)got, (uint64_t)st.st_size, width, path, out, err, errlen);
}

int tokfile_open_layout(const char *path, int width, tokfile_layout_t *out, char *err, size_t errlen)
{
    /* this runs in the coordinator's submission too: nothing here may block */
    const int fd = dataroot_open(path, err, errlen);
    if (fd < 0) return -1;
    const int rc = tokfile_fd_layout(fd, path, width, out, err, errlen);
    close(fd);
    return rc;
}
