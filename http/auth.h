/* http/auth.h - bearer tokens and the listen address rules of the HTTP API.
 *
 * Mutating endpoints need "Authorization: Bearer <token>" when a token is configured
 * (env PACER_TOKEN or --token-file); --auth-reads extends that to the read endpoints.
 * The daemon refuses a non-loopback --listen address without a token (http_check_config
 * in server.h). Everything here is pure: no I/O except auth_token_load.
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

#endif
