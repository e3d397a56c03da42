/* http/tls.c - see tls.h. */
#include "tls.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microhttpd.h>

/* Reads path whole into a NUL-terminated buffer of at most HTTP_TLS_FILE_MAX bytes. The
 * descriptor's own fstat is the one checked (no race with a rename between a stat and
 * the open). private: the key, which must not be readable by group or others. */
static char *read_pem(const char *opt, const char *path, int private, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        snprintf(err, errlen, "--%s %s: %s", opt, path, strerror(errno));
        return NULL;
    }
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "--%s %s: not a regular file", opt, path);
        goto out;
    }
    if (private && (st.st_mode & 077)) {
        snprintf(err, errlen,
                 "--%s %s: the private key is readable or writable by group or others (mode %03o); "
                 "chmod 600 it",
                 opt, path, (unsigned)(st.st_mode & 0777));
        goto out;
    }
    if (st.st_size > HTTP_TLS_FILE_MAX) {
        snprintf(err, errlen, "--%s %s: %lld bytes, more than the %d a PEM file may have here", opt, path,
                 (long long)st.st_size, HTTP_TLS_FILE_MAX);
        goto out;
    }
    buf = malloc(HTTP_TLS_FILE_MAX + 1);
    if (!buf) {
        snprintf(err, errlen, "--%s: out of memory", opt);
        goto out;
    }
    size_t n = 0;
    for (;;) {
        ssize_t k = read(fd, buf + n, HTTP_TLS_FILE_MAX + 1 - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(err, errlen, "--%s %s: %s", opt, path, strerror(errno));
            goto fail;
        }
        if (k == 0 || n + (size_t)k > HTTP_TLS_FILE_MAX) {
            n += (size_t)k;
            break;
        }
        n += (size_t)k;
    }
    if (n > HTTP_TLS_FILE_MAX) {
        snprintf(err, errlen, "--%s %s: more than the %d bytes a PEM file may have here", opt, path, HTTP_TLS_FILE_MAX);
        goto fail;
    }
    buf[n] = 0;
    const char *want = private ? "PRIVATE KEY-----" : "-----BEGIN CERTIFICATE-----";
    if (memchr(buf, 0, n) || !strstr(buf, want)) {
        snprintf(err, errlen, "--%s %s: not a PEM %s (no '%s' line)", opt, path,
                 private ? "private key" : "certificate", private ? "-----BEGIN ... PRIVATE KEY-----" : want);
        goto fail;
    }
    goto out;
fail:
    explicit_bzero(buf, HTTP_TLS_FILE_MAX + 1);
    free(buf);
    buf = NULL;
out:
    close(fd);
    return buf;
}

/* The trial daemon's messages: the first one says why GnuTLS refused the pair. */
static void trial_log(void *cls, const char *fmt, va_list ap)
{
    char *why = cls;
    if (why[0]) return;
    vsnprintf(why, 256, fmt, ap);
    why[strcspn(why, "\r\n")] = 0;
}

static enum MHD_Result trial_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                     const char *version, const char *data, size_t *size, void **con_cls)
{
    (void)cls, (void)conn, (void)url, (void)method, (void)version, (void)data, (void)size, (void)con_cls;
    return MHD_NO;
}

int http_tls_load(const char *cert_path, const char *key_path, http_tls_t *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (!cert_path && !key_path) return 0;
    if (!cert_path || !key_path) {
        snprintf(err, errlen, "--tls-cert and --tls-key: give both (HTTPS needs the certificate and its key)");
        return -1;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(err, errlen,
                 "--tls-cert: this libmicrohttpd was built without TLS (GnuTLS); install one with it "
                 "(Debian's libmicrohttpd12 has it) or serve plain HTTP behind a TLS proxy");
        return -1;
    }
    if (!(t->cert = read_pem("tls-cert", cert_path, 0, err, errlen))) return -1;
    if (!(t->key = read_pem("tls-key", key_path, 1, err, errlen))) {
        http_tls_free(t);
        return -1;
    }
    /* libmicrohttpd parses both when a daemon starts (MHD_TLS_init); a daemon with no
     * listening socket and no thread does exactly that and nothing else. */
    char why[256] = "";
    struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL,
                                            trial_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, trial_log, why,
                                            MHD_OPTION_HTTPS_MEM_KEY, t->key, MHD_OPTION_HTTPS_MEM_CERT, t->cert,
                                            MHD_OPTION_END);
    if (!d) {
        snprintf(err, errlen, "--tls-cert %s and --tls-key %s: refused: %s", cert_path, key_path,
                 why[0] ? why : "libmicrohttpd could not use them (is the key the certificate's?)");
        http_tls_free(t);
        return -1;
    }
    MHD_stop_daemon(d);
    return 0;
}

void http_tls_free(http_tls_t *t)
{
    if (t->key) explicit_bzero(t->key, strlen(t->key));
    free(t->key);
    free(t->cert);
    t->key = t->cert = NULL;
}
