/* cli/format.h - what `pacer` prints for people: tables, the job detail, times and
 * durations, and the one-line form of an API error (its RFC 7807 problem detail).
 *
 * Everything printed comes from the coordinator (job names, reasons, problem details),
 * so cells are cleaned: control characters (a terminal escape in a log line that became
 * a reason) are shown as '?', and long values are cut at a UTF-8 boundary. Pure: the
 * functions write to the FILE they are given and take "now" as an argument.
 */
#ifndef PACER_CLI_FORMAT_H
#define PACER_CLI_FORMAT_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* in, with control characters as '?', cut to at most max characters (UTF-8 code points;
 * 0 = no limit) with "..." at the end when cut, into out (always terminated). */
void fmt_clean(const char *in, size_t max, char *out, size_t len);

/* The number of characters (code points) of a UTF-8 string. */
size_t fmt_width(const char *s);

/* "45s", "12m", "3h", "2d": how long ago, for tables. Negative or NaN: "-". */
void fmt_age(double seconds, char *out, size_t len);
/* "850ms", "42s", "1m23s", "2h05m", "3d04h". */
void fmt_duration(double seconds, char *out, size_t len);
/* A unix time as local "2026-11-22 09:01:02"; 0 or less: "-". */
void fmt_time(double unix_s, char *out, size_t len);

/* ---- tables ------------------------------------------------------------------------------ */

typedef struct table table_t;

/* A table with ncols columns (at most 16) named by headers. */
table_t *table_new(int ncols, const char *const *headers);
/* Adds a row of ncols cells (copied, cleaned; NULL = ""). 0 or -1 (out of memory). */
int table_add(table_t *t, const char *const *cells);
/* Columns padded to their widest cell, two spaces apart, the last one unpadded;
 * columns flagged right-aligned (table_align_right) are padded on the left. */
void table_align_right(table_t *t, int col);
void table_print(const table_t *t, FILE *f);
void table_free(table_t *t);

/* ---- the API's objects ------------------------------------------------------------------ */

/* `pacer ls`: the rows of a JobList ({"jobs": [...], "total": N}), and a line when the
 * page holds fewer jobs than total. */
void fmt_jobs(FILE *f, json_t *list, double now);
/* `pacer get`: a Job as "key  value" lines. */
void fmt_job(FILE *f, json_t *job, double now);

/* `pacer models`: the rows of a ModelList ({"models": [...]}); `pacer models NAME`: one
 * Model as "key  value" lines; `pacer datasets`: the rows of a DatasetList. A figure the
 * answer lacks is "-". */
void fmt_models(FILE *f, json_t *list);
void fmt_model(FILE *f, json_t *model);
/* PUT /api/v1/models/NAME's summary (`pacer upload`); created: 201 rather than 200. */
void fmt_upload(FILE *f, json_t *summary, int created);
void fmt_datasets(FILE *f, json_t *list);
/* GET /api/v1/users: NAME ROLE CREATED EXPIRES CREATED-BY. */
void fmt_users(FILE *f, json_t *list);
/* GET /api/v1/whoami's answer as "name", "role", "auth", "expires" lines ("-" for an
 * anonymous reader's name, "never" for no expiry). */
void fmt_whoami(FILE *f, json_t *who);

/* The one-line message of an API error: "No such job: no job j-9 (HTTP 404)", with the
 * spec field or query parameter when the problem names one. A body that is not a problem
 * document gives "HTTP 502" and its first line (cleaned, cut). */
void fmt_problem(long status, const char *body, size_t body_len, char *out, size_t len);

/* Why a job has no file (model.onnx, model.safetensors: the API's 404 no-model), for
 * `pacer export`: said per state from the Job, since a job that failed before its first
 * checkpoint will never have one, a running one will. */
void fmt_no_model(json_t *job, const char *file, char *out, size_t len);

/* The exit status of a final job state: 0 SUCCEEDED, 4 FAILED, 5 CANCELLED; -1 when the
 * state is not final (or NULL). */
int fmt_state_exit(const char *state);

/* Prints a JSON value for scripts: indented, 15 significant digits, newline. */
int fmt_json(FILE *f, json_t *j);
/* The same on one line (event streams, pages). */
int fmt_json_line(FILE *f, json_t *j);

#endif
