/* http/static.h - the dashboard's files: GET / (index.html) and GET /static/{path}.
 *
 * Files come only from the static directory chosen at start (made absolute), never a
 * directory listing: a path is served when each of its segments is [A-Za-z0-9._-]+ and
 * does not start with '.', and it opens (without following a final symlink) as a regular
 * file. Everything else is a 404. Content-Type comes from the extension.
 */
#ifndef PACER_HTTP_STATIC_H
#define PACER_HTTP_STATIC_H

#include <stddef.h>

#include <microhttpd.h>

/* 1 when rel (relative to the static root, no leading '/') is a path we may serve. */
int static_path_ok(const char *rel);

/* The Content-Type for a file name; "application/octet-stream" when unknown. */
const char *static_content_type(const char *name);

/* Picks the static directory: dir when given (must exist), else STATIC next to the
 * executable (build/static), else ./static. Writes the absolute path; -1 with err when
 * none is a directory. */
int static_root_resolve(const char *dir, char *out, size_t len, char *err, size_t errlen);

/* Serves root/rel (or 404); uPlot's files fall back to root/node_modules/uplot/dist/
 * so that serving the source tree's static/ directory also works. */
enum MHD_Result static_serve(struct MHD_Connection *conn, const char *root, const char *rel, const char *path);

#endif
