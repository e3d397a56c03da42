/* http/auth.h - bearer tokens and the listen address rules of the HTTP API.
 *
 * When a token is configured (env PACER_TOKEN or --token-file) every API endpoint needs
 * "Authorization: Bearer <token>"; --public-reads opens the read endpoints again. The
 * daemon refuses a non-loopback --listen address without a token (http_check_config in
 * server.h), and without a token it answers only requests whose Host names a loopback
 * address or an --allowed-host: a web page whose name an attacker re-points at 127.0.0.1
 * (DNS rebinding) gets 421, not the API. Everything here is pure: no I/O except
 * auth_token_load.
 */
#ifndef PACER_HTTP_AUTH_H
#define PACER_HTTP_AUTH_H

#include <stddef.h>

#define AUTH_TOKEN_MAX 512

/* 1 when the presented token equals the secret. The time taken depends on the secret's
 * length only, never on where the two differ. */
int auth_equal(const char *presented, size_t plen, const char *secret, size_t slen);

/* Finds the token of an Authorization header value ("Bearer <token>", scheme case-
 * insensitive, spaces around the token ignored). Returns 0 and sets *tok, *len; -1 when
 * the header is missing or is not a bearer credential. */
int auth_bearer(const char *header, const char **tok, size_t *len);

/* Reads a token file: the first line, without surrounding white space. Returns 0, or -1
 * with err set (unreadable, empty, longer than AUTH_TOKEN_MAX - 1, control characters). */
int auth_token_load(const char *path, char *out, size_t outlen, char *err, size_t errlen);

/* Checks a token given in the environment the same way as a file's. 0 or -1 with err. */
int auth_token_check(const char *tok, char *err, size_t errlen);

/* 1 when host (from --listen, without brackets) names only the loopback interface:
 * 127.0.0.0/8, ::1 or "localhost". "", "0.0.0.0" and "::" are every interface. */
int auth_host_is_loopback(const char *host);

#define AUTH_HOST_MAX 255 /* longest host name (RFC 1035) */

/* The host of a Host header value ("localhost:8080", "[::1]:80", "Example.org.") into
 * host, lower-cased, without port, brackets or a final dot. Returns 0, or -1 when it is
 * not a host[:port] (empty, bad port, a bare IPv6 address, characters no host name or
 * address has, an empty label as in "a..b", brackets around anything but an IPv6
 * address, longer than AUTH_HOST_MAX). */
int auth_host_header_parse(const char *value, char *host, size_t len);

/* 1 when a request with this Host header value may be answered by a server that
 * listens on loopback without a token: its host is a loopback name or address
 * (auth_host_is_loopback), or equals one of allowed[0..nallowed) (host names, compared
 * without case, port and final dot). A missing or malformed header is refused. */
int auth_host_allowed(const char *value, const char *const *allowed, int nallowed);

/* The Host header rule of HTTP/1.1 (RFC 9112 section 3.2), checked for every request
 * whether or not a token is set: more than one Host header, or a value holding a NUL byte,
 * is a bad request (400), since the server, a proxy in front of it and the DNS-rebinding
 * rule above could each read another host from it. nhosts: how many Host header lines came;
 * value, len: the first one's value and its length as received (len > strlen(value) when
 * a NUL is inside; value NULL when none came). Returns NULL when acceptable, else the
 * refusal's detail, a static string. */
const char *auth_host_headers_problem(size_t nhosts, const char *value, size_t len);

#endif
