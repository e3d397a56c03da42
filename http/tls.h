/* http/tls.h - the coordinator's certificate and key for HTTPS (--tls-cert, --tls-key).
 *
 * http_tls_load() runs before anything starts (the daemon exits 2 when it fails): it
 * reads both PEM files (each at most HTTP_TLS_FILE_MAX bytes), refuses a key file that
 * other users may read, checks that libmicrohttpd was built with TLS, and hands both to a
 * throw-away libmicrohttpd daemon without a socket, so that a certificate GnuTLS cannot
 * parse, or a key that is not the certificate's, is refused now and named, not at the
 * first connection. The key's bytes are never logged; http_tls_free() wipes them.
 * server.c gives the two texts to the real daemon (MHD_OPTION_HTTPS_MEM_KEY/_CERT).
 */
#ifndef PACER_HTTP_TLS_H
#define PACER_HTTP_TLS_H

#include <stddef.h>

#define HTTP_TLS_FILE_MAX (256 * 1024) /* a chain of a few certificates fits many times */

typedef struct {
    char *cert; /* PEM, NUL-terminated; NULL when TLS is off */
    char *key;
} http_tls_t;

/* cert_path and key_path both NULL: TLS off (t zeroed), 0. One without the other, or a
 * file that is missing, unreadable, too large, not PEM, readable by group or others (the
 * key), or a pair libmicrohttpd refuses: -1 with a message naming the option and file. */
int http_tls_load(const char *cert_path, const char *key_path, http_tls_t *t, char *err, size_t errlen);

void http_tls_free(http_tls_t *t);

#endif
