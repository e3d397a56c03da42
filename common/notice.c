/* common/notice.c - see notice.h. */
#include "notice.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "errmsg.h"
#include "fs.h"
#include "jsonbody.h"

#define NOTICE_RANK_MAX (1 << 20)
#define NOTICE_STEP_MAX (1LL << 53) /* what a JSON number carries exactly */

int notice_path(char *out, size_t len, const char *dir, const char *name)
{
    int k = snprintf(out, len, "%s/%s.notice", dir, name);
    return k < 0 || (size_t)k >= len ? -1 : 0;
}

int notice_write(const char *path, const notice_t *n, char *err, size_t errlen)
{
    json_t *o = json_pack("{s:i, s:i, s:s, s:I, s:I}", "signal", n->signal, "rank", n->rank, "host", n->host, "at_step",
                          (json_int_t)n->at_step, "checkpoint_step", (json_int_t)n->checkpoint_step);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    if (!text) return errmsg(err, errlen, "%s: cannot format the notice (host not UTF-8?)", path);
    size_t len = strlen(text);
    text[len] = '\n'; /* json_dumps' NUL becomes the line's end */
    int rc = fs_atomic_write(path, text, len + 1, 0600);
    int e = errno;
    free(text);
    if (rc != 0) return errmsg(err, errlen, "%s: %s", path, strerror(e));
    return 0;
}

/* An integer member in [lo, hi]: 0, or -1 with err naming it. */
static int int_field(json_t *o, const char *key, long long lo, long long hi, long long *out, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) return errmsg(err, errlen, "notice: \"%s\" is missing or not an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return errmsg(err, errlen, "notice: \"%s\" %lld is outside %lld..%lld", key, x, lo, hi);
    *out = x;
    return 0;
}

static int host_field(json_t *o, notice_t *n, char *err, size_t errlen)
{
    json_t *v = json_object_get(o, "host");
    if (!v) return 0;
    const char *h = json_string_value(v);
    if (!h) return errmsg(err, errlen, "notice: \"host\" is not a string");
    size_t len = json_string_length(v);
    if (len >= sizeof n->host)
        return errmsg(err, errlen, "notice: \"host\" is longer than %zu bytes", sizeof n->host - 1);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)h[i] < 0x21 || (unsigned char)h[i] > 0x7e)
            return errmsg(err, errlen, "notice: \"host\" holds a byte that is not printable ASCII");
    memcpy(n->host, h, len + 1);
    return 0;
}

int notice_parse(const char *text, size_t len, notice_t *n, char *err, size_t errlen)
{
    memset(n, 0, sizeof *n);
    if (len > NOTICE_FILE_MAX) return errmsg(err, errlen, "notice: %zu bytes, more than %d", len, NOTICE_FILE_MAX);
    json_error_t je;
    json_t *o = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return errmsg(err, errlen, "notice: not a JSON object%s%s", o ? "" : ": ", o ? "" : jsonbody_text(&je));
    }
    long long sig = 0, rank = 0, at = 0, ck = 0;
    int rc = int_field(o, "signal", 1, 64, &sig, err, errlen);
    if (rc == 0) rc = int_field(o, "rank", 0, NOTICE_RANK_MAX, &rank, err, errlen);
    if (rc == 0) rc = int_field(o, "at_step", 0, NOTICE_STEP_MAX, &at, err, errlen);
    if (rc == 0) rc = int_field(o, "checkpoint_step", -1, at + 1, &ck, err, errlen);
    if (rc == 0) rc = host_field(o, n, err, errlen);
    json_decref(o);
    if (rc != 0) return -1;
    n->signal = (int)sig;
    n->rank = (int)rank;
    n->at_step = at;
    n->checkpoint_step = ck;
    return 0;
}

int notice_read(const char *path, notice_t *n, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return errmsg(err, errlen, "%s: %s", path, strerror(errno));
    }
    char buf[NOTICE_FILE_MAX + 1];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fd, buf + got, sizeof buf - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == sizeof buf) break;
    }
    close(fd);
    if (got > NOTICE_FILE_MAX)
        return errmsg(err, errlen, "%s: more than %d bytes: not a notice", path, NOTICE_FILE_MAX);
    char why[256];
    if (notice_parse(buf, got, n, why, sizeof why) != 0) return errmsg(err, errlen, "%s: %s", path, why);
    return 1;
}
