/* common/redis_url.h - Redis URLs and connecting to one, for every process that talks to
 * Redis: the worker's sink (worker/redis_report.c) and the coordinator (its tick and its
 * connection pool).
 */
#ifndef PACER_REDIS_URL_H
#define PACER_REDIS_URL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#define REDIS_URL_MAX 512

/* A parsed Redis URL: redis://[[user]:password@]host[:port][/db] or
 * unix:///absolute/path/to/socket[?db=N]. */
typedef struct {
    int is_unix;
    char host[256];     /* TCP host name or address (brackets removed for IPv6) */
    int port;           /* default 6379 */
    char path[108];     /* unix socket path (sun_path is 108 bytes) */
    int db;             /* SELECT db; 0 = default */
    char password[128]; /* AUTH when non-empty */
} redis_url_t;

/* Parses url into *out. Returns 0, or -1 with one line in err (which shows the URL with
 * its password masked, as redis_url_redact writes it). */
int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen);

/* The URL as logs and answers may show it: a password in redis://[user:]password@...
 * becomes "***" ("redis://:***@db:6379/1"). Anything else is copied (truncated to fit). */
void redis_url_redact(const char *url, char *out, size_t len);

/* The URL without its user and password ("redis://db:6379/1"): what goes on a worker's
 * command line, where ps shows it to every user; the password travels in a file. */
void redis_url_strip_password(const char *url, char *out, size_t len);

/* Reads the password for u from path (pacer-worker --redis-password-file): the first
 * line, without its line ending. The file must be a regular file that only its owner can
 * read (mode 0600 or 0400), or it is refused: a password others can read is no secret.
 * Messages never show what the file holds. Returns 0, or -1 with err. */
int redis_url_read_password(redis_url_t *u, const char *path, char *err, size_t errlen);

/* Connects (timeout_s for connect, reads and writes), then AUTH and SELECT when the URL
 * asks for them. Returns a context the caller owns (redisFree), or NULL with err set. */
redisContext *redis_url_connect(const redis_url_t *u, double timeout_s, char *err, size_t errlen);

#endif
