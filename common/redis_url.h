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
    char host[256];      /* TCP host name or address (brackets removed for IPv6) */
    int port;            /* default 6379 */
    char path[108];      /* unix socket path (sun_path is 108 bytes) */
    int db;              /* SELECT db; 0 = default */
    char password[128];  /* AUTH when non-empty */
} redis_url_t;

/* Parses url into *out. Returns 0, or -1 with one line in err. */
int redis_url_parse(const char *url, redis_url_t *out, char *err, size_t errlen);

/* Connects (timeout_s for connect, reads and writes), then AUTH and SELECT when the URL
 * asks for them. Returns a context the caller owns (redisFree), or NULL with err set. */
redisContext *redis_url_connect(const redis_url_t *u, double timeout_s, char *err, size_t errlen);

#endif
