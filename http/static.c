/* http/static.c - see static.h. */
#include "static.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "respond.h"

#define STATIC_PATH_MAX 256

int static_path_ok(const char *rel)
{
    if (!rel || !*rel || strlen(rel) >= STATIC_PATH_MAX) return 0;
    const char *seg = rel;
    for (const char *p = rel;; p++) {
        if (*p == '/' || *p == 0) {
            /* An empty segment ("a//b", "a/"), or one starting with '.' (".." and dot files). */
            if (p == seg || *seg == '.') return 0;
            if (*p == 0) return 1;
            seg = p + 1;
            continue;
        }
        char c = *p;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        if (!ok) return 0;
    }
}

static const struct {
    const char *ext;
    const char *type;
} TYPES[] = {
    {".html", "text/html; charset=utf-8"},
    {".css", "text/css; charset=utf-8"},
    {".js", "text/javascript; charset=utf-8"},
    {".mjs", "text/javascript; charset=utf-8"},
    {".json", "application/json"},
    {".map", "application/json"},
    {".svg", "image/svg+xml"},
    {".png", "image/png"},
    {".ico", "image/x-icon"},
    {".txt", "text/plain; charset=utf-8"},
    {".woff2", "font/woff2"},
};

const char *static_content_type(const char *name)
{
    const char *dot = name ? strrchr(name, '.') : NULL;
    if (dot && !strchr(dot, '/'))
        for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
            if (strcasecmp(dot, TYPES[i].ext) == 0) return TYPES[i].type;
    return "application/octet-stream";
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

int static_root_resolve(const char *dir, char *out, size_t len, char *err, size_t errlen)
{
    char exe[PATH_MAX], cand[PATH_MAX + 16];
    if (dir && *dir) {
        if (!is_dir(dir) || !realpath(dir, exe)) {
            snprintf(err, errlen, "--static-dir %s: not a directory", dir);
            return -1;
        }
        snprintf(out, len, "%s", exe);
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        snprintf(cand, sizeof cand, "%s/static", exe);
        if (is_dir(cand) && realpath(cand, exe)) {
            snprintf(out, len, "%s", exe);
            return 0;
        }
    }
    if (is_dir("static") && realpath("static", exe)) {
        snprintf(out, len, "%s", exe);
        return 0;
    }
    snprintf(err, errlen, "no static directory (build/static next to the binary, or ./static); use --static-dir");
    return -1;
}

static int open_file(const char *root, const char *rel, int *fd_out, struct stat *st)
{
    char full[PATH_MAX + STATIC_PATH_MAX + 32];
    int k = snprintf(full, sizeof full, "%s/%s", root, rel);
    if (k < 0 || (size_t)k >= sizeof full) return -1;
    int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        return -1;
    }
    *fd_out = fd;
    return 0;
}

enum MHD_Result static_serve(struct MHD_Connection *conn, const char *root, const char *rel, const char *path)
{
    int fd = -1;
    struct stat st;
    int found = static_path_ok(rel) && open_file(root, rel, &fd, &st) == 0;
    if (!found && static_path_ok(rel) && strncmp(rel, "vendor/", 7) == 0 && !strchr(rel + 7, '/')) {
        char alt[STATIC_PATH_MAX + 64];
        snprintf(alt, sizeof alt, "node_modules/uplot/dist/%s", rel + 7);
        found = open_file(root, alt, &fd, &st) == 0;
    }
    if (!found) {
        json_t *p = problem_new(404, "not-found", NULL, "no such file", NULL, NULL);
        problem_set_instance(p, path);
        return respond_problem(conn, p, NULL, 0);
    }
    /* MHD reads the file itself (sendfile where it can) and closes fd with the response. */
    struct MHD_Response *r = MHD_create_response_from_fd((size_t)st.st_size, fd);
    if (!r) {
        close(fd);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, static_content_type(rel));
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    respond_common_headers(r);
    if (strstr(rel, ".html"))
        MHD_add_response_header(r, "Content-Security-Policy",
                                "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                                "connect-src 'self'; frame-ancestors 'none'");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}
