/* common/redis_url.c - see redis_url.h. */
#include "redis_url.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

/* The userinfo of a redis:// URL: [user[:password]]@ before the first '/'. Returns the
 * position of the '@' or NULL; *colon is the ':' inside it or NULL. */
static const char *userinfo(const char *url, const char **colon)
{
    *colon = NULL;
    if (!url || strncmp(url, "redis://", 8) != 0) return NULL;
    const char *p = url + 8, *end = p + strcspn(p, "/");
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@') at = q; /* the last one: a password may hold '@' */
    if (at) *colon = memchr(p, ':', (size_t)(at - p));
    return at;
}

void redis_url_redact(const char *url, char *out, size_t len)
{
    if (!len) return;
    const char *colon, *at = userinfo(url, &colon);
    if (!at) {
        snprintf(out, len, "%s", url ? url : "");
        return;
    }
    /* A user name is kept; "redis://secret@host" has no user, only a password. */
    int user = colon ? (int)(colon - (url + 8)) : 0;
    snprintf(out, len, "redis://%.*s:***%s", user, url + 8, at);
}

void redis_url_strip_password(const char *url, char *out, size_t len)
{
    if (!len) return;
    const char *colon, *at = userinfo(url, &colon);
    if (!at) snprintf(out, len, "%s", url ? url : "");
    else snprintf(out, len, "redis://%s", at + 1);
}

int redis_url_read_password(redis_url_t *u, const char *path, char *err, size_t errlen)
{
    char buf[sizeof u->password + 2];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "--redis-password-file %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
        snprintf(err, errlen, "--redis-password-file %s: %s", path,
                 !S_ISREG(st.st_mode) ? "not a regular file"
                                      : "others can read it; it must be readable only by its owner (chmod 600)");
        close(fd);
        return -1;
    }
    ssize_t n;
    size_t got = 0;
    while (got < sizeof buf && (n = read(fd, buf + got, sizeof buf - got)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errlen, "--redis-password-file %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        got += (size_t)n;
    }
    close(fd);
    size_t k = 0;
    while (k < got && buf[k] != '\n' && buf[k] != '\r') k++;
    if (k == 0 || k >= sizeof u->password || memchr(buf, 0, k)) {
        snprintf(err, errlen, "--redis-password-file %s: %s", path,
                 k == 0                    ? "empty first line"
                 : k >= sizeof u->password ? "password too long"
                                           : "contains a NUL byte");
        memset(buf, 0, sizeof buf);
        return -1;
    }
    memcpy(u->password, buf, k);
    u->password[k] = 0;
    memset(buf, 0, sizeof buf);
    return 0;
}

static int parse_uint(const char *s, size_t len, long max, long *out)
{
    if (len == 0 || len > 9) return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    if (v > max) return -1;
    *out = v;
    return 0;
}

int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen)
{
    /* Messages name the URL with its password masked: they reach logs and answers. */
    char shown[REDIS_URL_MAX + 16];
    redis_url_redact(url, shown, sizeof shown);
    memset(out, 0, sizeof *out);
    out->port = 6379;
    if (!url || !*url) {
        snprintf(err, errlen, "redis URL is empty");
        return -1;
    }
    long v;
    if (strncmp(url, "unix://", 7) == 0) {
        const char *p = url + 7;
        const char *q = strchr(p, '?');
        size_t plen = q ? (size_t)(q - p) : strlen(p);
        if (plen == 0 || p[0] != '/') {
            snprintf(err, errlen, "%s: a unix socket URL needs an absolute path (unix:///path/to/socket)", shown);
            return -1;
        }
        if (plen >= sizeof out->path) {
            snprintf(err, errlen, "%s: socket path longer than %zu bytes", shown, sizeof out->path - 1);
            return -1;
        }
        memcpy(out->path, p, plen);
        out->is_unix = 1;
        if (q) {
            if (strncmp(q, "?db=", 4) != 0 || parse_uint(q + 4, strlen(q + 4), 1 << 20, &v) != 0) {
                snprintf(err, errlen, "%s: the only query understood is ?db=N", shown);
                return -1;
            }
            out->db = (int)v;
        }
        return 0;
    }
    if (strncmp(url, "redis://", 8) != 0) {
        snprintf(err, errlen, "%s: a Redis URL starts with redis:// or unix://", shown);
        return -1;
    }
    const char *p = url + 8;
    const char *end = p + strcspn(p, "/"); /* authority ends at the first '/' */
    const char *at = NULL;
    for (const char *q = p; q < end; q++)
        if (*q == '@') at = q; /* the last one: a password may hold '@' */
    if (at) {
        const char *colon = memchr(p, ':', (size_t)(at - p));
        const char *pw = colon ? colon + 1 : p;
        size_t pwlen = (size_t)(at - pw);
        if (pwlen >= sizeof out->password) {
            snprintf(err, errlen, "%s: password too long", shown);
            return -1;
        }
        memcpy(out->password, pw, pwlen);
        p = at + 1;
    }
    const char *hend, *portp = NULL;
    if (*p == '[') { /* [IPv6]:port */
        const char *rb = memchr(p, ']', (size_t)(end - p));
        if (!rb) {
            snprintf(err, errlen, "%s: unterminated '[' in host", shown);
            return -1;
        }
        p++;
        hend = rb;
        if (rb + 1 < end) {
            if (rb[1] != ':') {
                snprintf(err, errlen, "%s: expected ':' after ']'", shown);
                return -1;
            }
            portp = rb + 2;
        }
    } else {
        const char *colon = memchr(p, ':', (size_t)(end - p));
        hend = colon ? colon : end;
        if (colon) portp = colon + 1;
    }
    size_t hlen = (size_t)(hend - p);
    if (hlen == 0 || hlen >= sizeof out->host) {
        snprintf(err, errlen, "%s: %s host", shown, hlen ? "overlong" : "missing");
        return -1;
    }
    memcpy(out->host, p, hlen);
    if (portp) {
        if (parse_uint(portp, (size_t)(end - portp), 65535, &v) != 0 || v == 0) {
            snprintf(err, errlen, "%s: port must be a number between 1 and 65535", shown);
            return -1;
        }
        out->port = (int)v;
    }
    if (*end == '/' && end[1]) {
        if (parse_uint(end + 1, strlen(end + 1), 1 << 20, &v) != 0) {
            snprintf(err, errlen, "%s: the path must be a database number (/0, /1, ...)", shown);
            return -1;
        }
        out->db = (int)v;
    }
    return 0;
}

redisContext *redis_url_connect(const redis_url_t *u, double timeout_s, char *err, size_t errlen)
{
    struct timeval tv;
    tv.tv_sec = (time_t)timeout_s;
    tv.tv_usec = (suseconds_t)((timeout_s - (double)tv.tv_sec) * 1e6);
    redisContext *c = u->is_unix ? redisConnectUnixWithTimeout(u->path, tv)
                                 : redisConnectWithTimeout(u->host, u->port, tv);
    redisReply *r = NULL;
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (c->err) {
        if (u->is_unix) snprintf(err, errlen, "unix:%s: %s", u->path, c->errstr);
        else snprintf(err, errlen, "%s:%d: %s", u->host, u->port, c->errstr);
        goto fail;
    }
    /* Connect timeout alone is not enough: a server that stops answering must not hang
     * the caller either. */
    if (redisSetTimeout(c, tv) != REDIS_OK) {
        snprintf(err, errlen, "cannot set socket timeouts");
        goto fail;
    }
    if (!u->is_unix) redisEnableKeepAlive(c);
    if (u->password[0]) {
        r = redisCommand(c, "AUTH %s", u->password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "AUTH: %s", r ? r->str : c->errstr);
            goto fail;
        }
        freeReplyObject(r);
        r = NULL;
    }
    if (u->db) {
        r = redisCommand(c, "SELECT %d", u->db);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            snprintf(err, errlen, "SELECT %d: %s", u->db, r ? r->str : c->errstr);
            goto fail;
        }
        freeReplyObject(r);
    }
    return c;
fail:
    if (r) freeReplyObject(r);
    redisFree(c);
    return NULL;
}
