/* cli/format.c - see format.h. */
#include "format.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "catalog.h"
#include "cliargs.h"

#define TABLE_COLS_MAX 16
#define CELL_MAX 512

/* ---- text ------------------------------------------------------------------------------- */

size_t fmt_width(const char *s)
{
    size_t n = 0;
    for (; s && *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) n++;
    return n;
}

void fmt_clean(const char *in, size_t max, char *out, size_t len)
{
    if (!len) return;
    if (!in) in = "";
    size_t o = 0, chars = 0, total = fmt_width(in);
    int cut = max > 3 && total > max;
    size_t keep = cut ? max - 3 : (max ? max : (size_t)-1);
    for (const char *p = in; *p; p++) {
        unsigned char b = (unsigned char)*p;
        int start = (b & 0xC0) != 0x80;
        if (start && chars == keep) break;
        /* room for this character's bytes and the end marker */
        size_t clen = 1;
        if (start && b >= 0xC0) clen = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
        if (start && o + clen + (cut ? 3 : 0) >= len) {
            cut = 1;
            break;
        }
        if (!start && o + 1 >= len) break;
        if (start) chars++;
        if (b == 0xC2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9F) {
            out[o++] = '?'; /* a C1 control (U+0080..U+009F, e.g. CSI) */
            p++;
            continue;
        }
        out[o++] = (b < 0x20 || b == 0x7f) ? '?' : (char)b;
    }
    if (cut && o + 3 < len) {
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o < len ? o : len - 1] = 0;
}

void fmt_age(double s, char *out, size_t len)
{
    if (!(s >= 0) || !isfinite(s)) snprintf(out, len, "-");
    else if (s < 60) snprintf(out, len, "%.0fs", floor(s));
    else if (s < 3600) snprintf(out, len, "%.0fm", floor(s / 60));
    else if (s < 86400) snprintf(out, len, "%.0fh", floor(s / 3600));
    else snprintf(out, len, "%.0fd", floor(s / 86400));
}

void fmt_duration(double s, char *out, size_t len)
{
    if (!(s >= 0) || !isfinite(s)) {
        snprintf(out, len, "-");
        return;
    }
    if (s < 1) {
        snprintf(out, len, "%.0fms", floor(s * 1000));
        return;
    }
    long t = (long)floor(s);
    /* Kept to 9 digits (31 years), so the text fits every caller's 16-byte cell. */
    if (t > 999999999L) t = 999999999L;
    if (t < 0) t = 0;
    if (t < 60) snprintf(out, len, "%lds", t);
    else if (t < 3600) snprintf(out, len, "%ldm%02lds", t / 60, t % 60);
    else if (t < 86400) snprintf(out, len, "%ldh%02ldm", t / 3600, t % 3600 / 60);
    else snprintf(out, len, "%ldd%02ldh", t / 86400, t % 86400 / 3600);
}

void fmt_time(double unix_s, char *out, size_t len)
{
    struct tm tm;
    time_t t = (time_t)unix_s;
    if (!(unix_s > 0) || !localtime_r(&t, &tm) || !strftime(out, len, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(out, len, "-");
}

/* ---- tables ----------------------------------------------------------------------------- */

struct table {
    int ncols, nrows, cap;
    char **cells; /* nrows + 1 rows (the header first) of ncols */
    size_t width[TABLE_COLS_MAX];
    int right[TABLE_COLS_MAX];
};

static int table_row(table_t *t, const char *const *cells)
{
    if (t->nrows + 1 >= t->cap) {
        int cap = t->cap ? t->cap * 2 : 16;
        char **c = realloc(t->cells, (size_t)cap * (size_t)t->ncols * sizeof *c);
        if (!c) return -1;
        t->cells = c;
        t->cap = cap;
    }
    char **row = t->cells + (size_t)(t->nrows + 1) * (size_t)t->ncols;
    char clean[CELL_MAX];
    for (int i = 0; i < t->ncols; i++) {
        fmt_clean(cells[i] ? cells[i] : "", 0, clean, sizeof clean);
        row[i] = strdup(clean);
        if (!row[i]) {
            while (i-- > 0) free(row[i]);
            return -1;
        }
        size_t w = fmt_width(clean);
        if (w > t->width[i]) t->width[i] = w;
    }
    t->nrows++;
    return 0;
}

table_t *table_new(int ncols, const char *const *headers)
{
    if (ncols < 1 || ncols > TABLE_COLS_MAX) return NULL;
    table_t *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->ncols = ncols;
    t->nrows = -1; /* the header is row -1 */
    if (table_row(t, headers) != 0) {
        free(t);
        return NULL;
    }
    return t;
}

int table_add(table_t *t, const char *const *cells) { return table_row(t, cells); }

void table_align_right(table_t *t, int col)
{
    if (col >= 0 && col < t->ncols) t->right[col] = 1;
}

void table_print(const table_t *t, FILE *f)
{
    for (int r = 0; r <= t->nrows; r++) {
        char **row = t->cells + (size_t)r * (size_t)t->ncols;
        for (int i = 0; i < t->ncols; i++) {
            size_t pad = t->width[i] - fmt_width(row[i]);
            int last = i == t->ncols - 1;
            if (t->right[i]) fprintf(f, "%*s%s", (int)pad, "", row[i]);
            else fprintf(f, "%s%*s", row[i], last ? 0 : (int)pad, "");
            fputs(last ? "\n" : "  ", f);
        }
    }
}

void table_free(table_t *t)
{
    if (!t) return;
    for (size_t i = 0; i < (size_t)(t->nrows + 1) * (size_t)t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* ---- the API's objects -------------------------------------------------------------------- */

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "";
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* A number field in fmt, or "-" when it is missing or null (not measured: never 0). */
static void num_cell(json_t *o, const char *key, const char *fmt, char *out, size_t len)
{
    double v = num(o, key);
    if (isfinite(v)) snprintf(out, len, fmt, v);
    else snprintf(out, len, "-");
}

static void int_cell(json_t *o, const char *key, char *out, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else snprintf(out, len, "-");
}

/* The plural ending for a count printed by int_cell: "1 epoch", "2 epochs", "- epochs";
 * plural_es for "1 class", "10 classes". */
static const char *plural(const char *count) { return strcmp(count, "1") == 0 ? "" : "s"; }
static const char *plural_es(const char *count) { return strcmp(count, "1") == 0 ? "" : "es"; }

/* A queued job's place (its `queue` object): "#2 slots, starts in 3m10s" or "#2 slots,
 * start not estimated"; "" without one. */
static void queue_cell(json_t *job, double now, char *out, size_t len)
{
    json_t *q = json_object_get(job, "queue");
    json_t *est = json_object_get(q, "estimated_start");
    char in[48];
    if (!json_is_object(q)) {
        if (len) out[0] = 0;
        return;
    }
    if (json_is_number(est)) fmt_duration(json_number_value(est) - now, in, sizeof in);
    snprintf(out, len, "#%lld %s, %s%s", (long long)json_integer_value(json_object_get(q, "position")), str(q, "reason"),
             json_is_number(est) ? "starts in " : "start not estimated", json_is_number(est) ? in : "");
}

void fmt_jobs(FILE *f, json_t *list, double now)
{
    /* OWNER: "-" for a job from before users */
    static const char *const H[] = {"ID",      "STATE", "NAME", "OWNER",    "MODEL", "ALGORITHM",
                                    "WORKERS", "AGE",   "RAN",  "RESTARTS", "REASON"};
    table_t *t = table_new(11, H);
    if (!t) return;
    table_align_right(t, 6);
    table_align_right(t, 9);
    size_t i;
    json_t *job;
    json_t *jobs = json_object_get(list, "jobs");
    json_array_foreach(jobs, i, job)
    {
        char workers[24], age[48], ran[48], restarts[24], reason[128];
        int_cell(job, "workers", workers, sizeof workers);
        int_cell(job, "restarts", restarts, sizeof restarts);
        fmt_age(now - num(job, "submitted"), age, sizeof age);
        double started = num(job, "started"), finished = num(job, "finished");
        if (started > 0) fmt_duration((finished > 0 ? finished : now) - started, ran, sizeof ran);
        else snprintf(ran, sizeof ran, "-");
        /* a queued job: its place in the queue, ahead of a reason (a requeued one's
         * "preempted by ..."; pacer get shows both) */
        reason[0] = 0;
        queue_cell(job, now, reason, sizeof reason);
        if (!reason[0]) fmt_clean(str(job, "reason"), 60, reason, sizeof reason);
        const char *cells[] = {str(job, "id"),
                               str(job, "state"),
                               str(job, "name"),
                               *str(job, "owner") ? str(job, "owner") : "-",
                               str(job, "model"),
                               str(job, "algorithm"),
                               workers,
                               age,
                               ran,
                               restarts,
                               reason};
        table_add(t, cells);
    }
    if (json_array_size(jobs) == 0) fprintf(f, "no jobs\n");
    else table_print(t, f);
    table_free(t);
    json_int_t total = json_integer_value(json_object_get(list, "total"));
    json_int_t offset = json_integer_value(json_object_get(list, "offset"));
    if (total > (json_int_t)json_array_size(jobs) + offset)
        fprintf(f, "(%zu of %lld jobs; --limit N shows more)\n", json_array_size(jobs), (long long)total);
}

/* The key column of "key  value" lines: as wide as the longest key any of them prints
 * ("oversubscribed"), so that every value starts in the same column. */
#define KEY_WIDTH 14

static void row(FILE *f, const char *key, const char *value)
{
    char clean[1024];
    fmt_clean(value, 0, clean, sizeof clean);
    fprintf(f, "%-*s %s\n", KEY_WIDTH, key, clean);
}

/* Bytes for people: 512 B, 483.2 KiB, 1.4 MiB. */
static void fmt_size(double b, char *out, size_t len)
{
    static const char *const U[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (b >= 1024 && u < 4) {
        b /= 1024;
        u++;
    }
    if (u == 0) snprintf(out, len, "%.0f B", b);
    else snprintf(out, len, "%.1f %s", b, U[u]);
}

/* The kept checkpoints (the API's "checkpoints"): a count and the space, then one line
 * each, newest first, at most 20 of them; lm: a language model's, whose accuracy is the next token's. */
static void fmt_checkpoints(FILE *f, json_t *ck, int lm)
{
    json_t *items = json_object_get(ck, "items"), *it;
    char buf[256], sz[32], acc[40], step[24], epoch[24];
    size_t i;
    fmt_size(num(ck, "total_bytes"), sz, sizeof sz);
    snprintf(buf, sizeof buf, "%zu kept, %s%s%s", json_array_size(items), sz, *str(ck, "error") ? "; " : "",
             str(ck, "error"));
    row(f, "checkpoints", buf);
    json_array_foreach(items, i, it)
    {
        if (i == 20) {
            snprintf(buf, sizeof buf, "... %zu more", json_array_size(items) - 20);
            row(f, "", buf);
            break;
        }
        int_cell(it, "step", step, sizeof step);
        json_t *ep = json_object_get(it, "epoch");
        if (json_is_integer(ep) && json_integer_value(ep) >= 0) int_cell(it, "epoch", epoch, sizeof epoch);
        else snprintf(epoch, sizeof epoch, "?"); /* -1 or null: not known */
        double a = num(it, "test_accuracy");
        if (isfinite(a)) snprintf(acc, sizeof acc, "%saccuracy %.4f", lm ? "next-token " : "", a);
        else snprintf(acc, sizeof acc, "not evaluated");
        fmt_size(num(it, "bytes"), sz, sizeof sz);
        /* the stored epoch counts the epochs completed (common/ckptdir.h): a checkpoint
         * of step 1600 during epoch 2 says 1, so "epoch 1" would name the wrong one */
        snprintf(buf, sizeof buf, "step %s (%s epoch%s done), %s, %s%s%s", step, epoch, plural(epoch), acc, sz,
                 json_is_true(json_object_get(it, "latest")) ? ", latest" : "",
                 json_is_true(json_object_get(it, "best")) ? ", best" : "");
        row(f, "", buf);
    }
}

/* The summary's dataset object: classes, sizes, image shape and the decoded cache
 * ("10 classes, 500 train / 100 test samples, 3x32x32; cache /var/.../x.pdc (1.9 MiB,
 * decoded by this job)"). Summaries of older workers have a name there: nothing shown. */
static void fmt_dataset(FILE *f, json_t *d, json_t *sum)
{
    if (!json_is_object(d)) return;
    char buf[1024], cls[24], tr[24], te[24], sz[32];
    int_cell(d, "classes", cls, sizeof cls);
    int_cell(d, "train_samples", tr, sizeof tr);
    int_cell(d, "test_samples", te, sizeof te);
    json_t *shape = json_object_get(d, "shape");
    int n;
    if (json_is_integer(json_object_get(sum, "block_size"))) {
        /* a language model's: its classes are a vocabulary, a sample a window of tokens
         * (the summary's own block_size and vocab_size: a worker before the dataset's) */
        char block[24], tok[32];
        int_cell(sum, "block_size", block, sizeof block);
        int_cell(sum, "vocab_size", cls, sizeof cls);
        snprintf(tok, sizeof tok, "%s", *str(d, "tokenizer") ? str(d, "tokenizer") : str(d, "format"));
        n = snprintf(buf, sizeof buf, "vocabulary %s (%s), windows of %s tokens, %s train / %s test window%s", cls,
                     strcmp(tok, "tokens") == 0 ? "token files" : tok, block, tr, te, plural(te));
    } else {
        n = snprintf(buf, sizeof buf, "%s class%s, %s train / %s test sample%s, %lldx%lldx%lld", cls, plural_es(cls),
                     tr, te, plural(te), (long long)json_integer_value(json_array_get(shape, 0)),
                     (long long)json_integer_value(json_array_get(shape, 1)),
                     (long long)json_integer_value(json_array_get(shape, 2)));
    }
    json_t *cache = json_object_get(d, "cache");
    if (n > 0 && (size_t)n < sizeof buf && json_is_object(cache)) {
        fmt_size(num(cache, "bytes"), sz, sizeof sz);
        snprintf(buf + n, sizeof buf - (size_t)n, "; cache %s (%s, %s)", str(cache, "path"), sz,
                 json_is_true(json_object_get(cache, "built")) ? "decoded by this job" : "mapped, nothing decoded");
    } else if (n > 0 && (size_t)n < sizeof buf && *str(d, "cache_note")) {
        snprintf(buf + n, sizeof buf - (size_t)n, "; no cache: %s", str(d, "cache_note"));
    }
    row(f, "dataset", buf);
}

/* ---- the catalog ------------------------------------------------------------------------------ */

/* "1x28x28" from an ImageShape; "-" when it is not one. */
static void shape_cell(json_t *shape, char *out, size_t len)
{
    char c[24], h[24], w[24];
    int_cell(shape, "channels", c, sizeof c);
    int_cell(shape, "height", h, sizeof h);
    int_cell(shape, "width", w, sizeof w);
    if (json_is_object(shape)) {
        snprintf(out, len, "%sx%sx%s", c, h, w);
    } else if (json_is_array(shape) && json_array_size(shape) == 3 && json_is_integer(json_array_get(shape, 0)) &&
               json_is_integer(json_array_get(shape, 1)) && json_is_integer(json_array_get(shape, 2))) {
        /* an upload's summary says [C, H, W] */
        snprintf(out, len, "%lldx%lldx%lld", (long long)json_integer_value(json_array_get(shape, 0)),
                 (long long)json_integer_value(json_array_get(shape, 1)),
                 (long long)json_integer_value(json_array_get(shape, 2)));
    } else {
        snprintf(out, len, "-");
    }
}

/* 841.2K, 24.8M, 1.1G: counts for people; "-" when missing. */
static void count_cell(double v, char *out, size_t len)
{
    if (!isfinite(v)) snprintf(out, len, "-");
    else if (v >= 1e9) snprintf(out, len, "%.1fG", v / 1e9);
    else if (v >= 1e6) snprintf(out, len, "%.1fM", v / 1e6);
    else if (v >= 1e3) snprintf(out, len, "%.1fK", v / 1e3);
    else snprintf(out, len, "%.0f", v);
}

static void size_cell(double b, char *out, size_t len)
{
    if (isfinite(b)) fmt_size(b, out, len);
    else snprintf(out, len, "-");
}

void fmt_models(FILE *f, json_t *list)
{
    static const char *const H[] = {"NAME",         "SOURCE",       "INPUT",      "CLASSES", "PARAMS",
                                    "FLOPS/SAMPLE", "MODEL MEMORY", "PER SAMPLE", "DATASET"};
    table_t *t = table_new(9, H);
    if (!t) return;
    for (int c = 3; c <= 7; c++) table_align_right(t, c);
    size_t i;
    json_t *m, *models = json_object_get(list, "models");
    json_array_foreach(models, i, m)
    {
        char input[80], classes[24], params[24], flops[24], mem[32], per[32];
        json_t *memory = json_object_get(m, "memory");
        shape_cell(json_object_get(m, "input"), input, sizeof input);
        int_cell(m, "classes", classes, sizeof classes);
        count_cell(num(m, "parameters"), params, sizeof params);
        count_cell(num(m, "flops_per_sample"), flops, sizeof flops);
        size_cell(num(memory, "model_bytes"), mem, sizeof mem);
        size_cell(num(memory, "bytes_per_sample"), per, sizeof per);
        const char *cells[] = {str(m, "name"),
                               str(m, "source"),
                               input,
                               classes,
                               params,
                               flops,
                               mem,
                               per,
                               *str(m, "dataset") ? str(m, "dataset") : "-"};
        table_add(t, cells);
    }
    if (json_array_size(models) == 0) fprintf(f, "no models\n");
    else table_print(t, f);
    table_free(t);
}

/* The rows a model's detail and an upload's answer share: its input and classes, its layers. */
static void input_layers_rows(FILE *f, json_t *m)
{
    char buf[256], a[32], c[80];
    shape_cell(json_object_get(m, "input"), c, sizeof c);
    int_cell(m, "classes", a, sizeof a);
    snprintf(buf, sizeof buf, "%s images, %s class%s", c, a, plural_es(a));
    row(f, "input", buf);
    int_cell(m, "layers", a, sizeof a);
    row(f, "layers", a);
}

void fmt_model(FILE *f, json_t *m)
{
    char buf[256], a[32], b[32];
    json_t *memory = json_object_get(m, "memory");
    row(f, "name", str(m, "name"));
    row(f, "title", str(m, "title"));
    row(f, "source", str(m, "source"));
    input_layers_rows(f, m);
    int_cell(m, "parameters", a, sizeof a);
    int_cell(m, "buffers", b, sizeof b);
    snprintf(buf, sizeof buf, "%s (and %s buffer floats)", a, b);
    row(f, "parameters", buf);
    count_cell(num(m, "flops_per_sample"), a, sizeof a);
    snprintf(buf, sizeof buf, "%s forward, a sample", a);
    row(f, "flops", buf);
    size_cell(num(memory, "model_bytes"), a, sizeof a);
    size_cell(num(memory, "bytes_per_sample"), b, sizeof b);
    snprintf(buf, sizeof buf, "%s a rank + %s a sample of its largest batch (+ its data)", a, b);
    row(f, "memory", buf);
    row(f, "dataset", *str(m, "dataset") ? str(m, "dataset") : "-");
    if (*str(m, "sha256")) row(f, "sha256", str(m, "sha256"));
}

void fmt_upload(FILE *f, json_t *m, int created)
{
    char buf[256], a[32];
    row(f, "name", str(m, "name"));
    row(f, "stored", created ? "uploaded (new)" : "uploaded (replaced the previous upload of this name)");
    row(f, "sha256", str(m, "sha256"));
    input_layers_rows(f, m);
    int_cell(m, "parameters", a, sizeof a);
    row(f, "parameters", a);
    count_cell(num(m, "flops_per_sample"), a, sizeof a);
    snprintf(buf, sizeof buf, "%s forward, a sample", a);
    row(f, "flops", buf);
    snprintf(buf, sizeof buf, "a job spec names it as \"model\": {\"onnx\": \"%s\"}", str(m, "name"));
    row(f, "use", buf);
}

void fmt_datasets(FILE *f, json_t *list)
{
    static const char *const H[] = {"NAME", "FORMAT", "INPUT", "CLASSES", "TRAIN", "TEST", "HERE"};
    table_t *t = table_new(7, H);
    if (!t) return;
    for (int c = 3; c <= 5; c++) table_align_right(t, c);
    size_t i;
    json_t *d, *sets = json_object_get(list, "datasets");
    json_array_foreach(sets, i, d)
    {
        char input[80], classes[24], train[24], test[24];
        shape_cell(json_object_get(d, "input"), input, sizeof input);
        int_cell(d, "classes", classes, sizeof classes);
        int_cell(d, "train_samples", train, sizeof train);
        int_cell(d, "test_samples", test, sizeof test);
        const char *cells[] = {
            str(d, "name"), str(d, "format"), input, classes, train, test, *str(d, "path") ? str(d, "path") : "-"};
        table_add(t, cells);
    }
    if (json_array_size(sets) == 0) fprintf(f, "no data sets\n");
    else table_print(t, f);
    table_free(t);
}

/* Appends a, b, c to buf (used bytes so far; truncated at its end). */
static void placement_add(char *buf, size_t len, size_t *used, const char *a, const char *b, const char *c)
{
    int k = snprintf(buf + *used, len - *used, "%s%s%s", a, b ? b : "?", c);
    *used = k < 0 ? *used : *used + (size_t)k < len ? *used + (size_t)k : len - 1;
}

/* fmt_job's rows of where the job stands in the scheduler: its preemption, placement and
 * shrink, what it waits for, its place in the queue. */
static void job_scheduling_rows(FILE *f, json_t *job, double now)
{
    char buf[1024], t1[64], t2[64];
    if (*str(job, "preempted_by")) { /* --policy fair: its last preemption */
        fmt_time(num(job, "preempted_at"), t1, sizeof t1);
        snprintf(buf, sizeof buf, "by %s at %s", str(job, "preempted_by"), t1);
        row(f, "preempted", buf);
    }
    /* --policy hetero|agnostic: where it was placed and why ("x1: pw1; x1/2: pw2 pw3 (...)") */
    json_t *place = json_object_get(job, "placement"), *pl = json_object_get(place, "hosts_by_class"), *hl;
    if (json_is_object(pl)) {
        const char *cls;
        size_t used = 0;
        buf[0] = 0;
        json_object_foreach(pl, cls, hl)
        {
            size_t i;
            json_t *h;
            placement_add(buf, sizeof buf, &used, used ? "; " : "", cls, ":");
            json_array_foreach(hl, i, h) placement_add(buf, sizeof buf, &used, " ", json_string_value(h), "");
        }
        placement_add(buf, sizeof buf, &used, " (", str(place, "reason"), ")");
        row(f, "placement", buf);
    }
    /* a shrink instead of a preemption: the last resize that names the job it made room for */
    json_t *rz = json_object_get(job, "resizes"), *shrink = NULL, *e;
    size_t k;
    json_array_foreach(rz, k, e) if (*str(e, "preempted_by")) shrink = e;
    if (shrink) {
        fmt_time(num(shrink, "time"), t1, sizeof t1);
        snprintf(buf, sizeof buf, "%lld -> %lld ranks for %s at %s",
                 (long long)json_integer_value(json_object_get(shrink, "from")),
                 (long long)json_integer_value(json_object_get(shrink, "to")), str(shrink, "preempted_by"), t1);
        row(f, "shrunk", buf);
    }
    if (*str(job, "stall_text")) row(f, "waiting", str(job, "stall_text"));
    json_t *q = json_object_get(job, "queue");
    if (json_is_object(q)) {
        /* position, why it waits, and when it should start (docs/CLI.md) */
        json_t *est = json_object_get(q, "estimated_start");
        snprintf(buf, sizeof buf, "position %lld (%s): %s",
                 (long long)json_integer_value(json_object_get(q, "position")), str(q, "reason"), str(q, "detail"));
        row(f, "queue", buf);
        if (json_is_number(est)) {
            fmt_duration(json_number_value(est) - now, t1, sizeof t1);
            fmt_time(json_number_value(est), t2, sizeof t2);
            snprintf(buf, sizeof buf, "in %s (%s), from the running jobs' progress", t1, t2);
            row(f, "starts", buf);
        } else row(f, "starts", "not estimated (see queue)");
    }
    if (*str(job, "oversubscribed")) row(f, "oversubscribed", str(job, "oversubscribed"));
    if (json_object_get(job, "cancel_requested") && fmt_state_exit(str(job, "state")) < 0)
        row(f, "cancel", "requested");
}

/* fmt_job's rows of what the job trains: model, algorithm, workers and data. */
static void job_work_rows(FILE *f, json_t *job)
{
    char buf[1024];
    char workers[24], world[24];
    int_cell(job, "workers", workers, sizeof workers);
    int_cell(job, "world", world, sizeof world);
    snprintf(buf, sizeof buf, "%s, %s, %s worker%s%s%s%s", str(job, "model"), str(job, "algorithm"), workers,
             plural(workers), strcmp(world, workers) != 0 ? " (world " : "", strcmp(world, workers) != 0 ? world : "",
             strcmp(world, workers) != 0 ? ")" : "");
    row(f, "model", buf);
    json_t *spec = json_object_get(job, "spec");
    json_t *ds = json_object_get(spec, "dataset");
    if (json_is_object(spec)) {
        char epochs[24], batch[24];
        int_cell(spec, "epochs", epochs, sizeof epochs);
        int_cell(spec, "batch_size", batch, sizeof batch);
        /* A user's data set is its path (and format); a built-in one its name. */
        const char *format = str(ds, "format");
        catalog_format_t fmt;
        int user = catalog_format_parse(format, &fmt) == 0 && catalog_format_is_user(fmt);
        snprintf(buf, sizeof buf, "%s%s%s%s, %s epoch%s, batch %s%s",
                 !json_is_object(ds) ? "-"
                 : user              ? str(ds, "path")
                                     : str(ds, "name"),
                 user ? " (" : "", user ? format : "", user ? ")" : "", epochs, plural(epochs), batch,
                 json_is_true(json_object_get(job, "dynamic_batch")) ? " (dynamic)" : "");
        row(f, "data", buf);
    }
}

/* fmt_job's rows of when: submitted, started, finished or elapsed, restarts. */
static void job_time_rows(FILE *f, json_t *job, double now)
{
    char buf[1024], t1[64], t2[64];
    double sub = num(job, "submitted"), st = num(job, "started"), fin = num(job, "finished");
    fmt_time(sub, t1, sizeof t1);
    fmt_age(now - sub, t2, sizeof t2);
    snprintf(buf, sizeof buf, "%s (%s ago)", t1, t2);
    row(f, "submitted", buf);
    if (st > 0) {
        fmt_time(st, t1, sizeof t1);
        row(f, "started", t1);
    }
    if (fin > 0) {
        fmt_time(fin, t1, sizeof t1);
        if (st > 0) {
            fmt_duration(fin - st, t2, sizeof t2);
            snprintf(buf, sizeof buf, "%s (ran %s)", t1, t2);
        } else {
            snprintf(buf, sizeof buf, "%s", t1);
        }
        row(f, "finished", buf);
    } else if (st > 0) {
        fmt_duration(now - st, t2, sizeof t2);
        snprintf(buf, sizeof buf, "running for %s", t2);
        row(f, "elapsed", buf);
    }
    char restarts[24], attempts[24];
    int_cell(job, "restarts", restarts, sizeof restarts);
    int_cell(job, "attempts", attempts, sizeof attempts);
    snprintf(buf, sizeof buf, "%s (%s attempt%s)", restarts, attempts, plural(attempts));
    row(f, "restarts", buf);
}

/* fmt_job's rows of the run's health: the collapse detector's verdict, the learning-rate
 * scale after collapse restarts, retries. */
static void job_health_rows(FILE *f, json_t *job)
{
    char buf[1024];
    /* The detector's verdict (worker/health.h): the current attempt's, else the summary's. */
    json_t *health = json_object_get(job, "health");
    if (!json_is_object(health)) health = json_object_get(json_object_get(job, "summary"), "health");
    if (json_is_object(health)) {
        if (strcmp(str(health, "state"), "collapsed") == 0)
            snprintf(buf, sizeof buf, "COLLAPSED since step %lld: %s",
                     (long long)json_integer_value(json_object_get(health, "since_step")), str(health, "reason"));
        else snprintf(buf, sizeof buf, "%s", str(health, "state"));
        row(f, "health", buf);
    }
    double lr_scale = num(job, "lr_scale");
    if (isfinite(lr_scale) && lr_scale < 1) {
        snprintf(buf, sizeof buf, "x%g of the spec's (halved at each collapse restart)", lr_scale);
        row(f, "lr scale", buf);
    }
    if (*str(job, "parent")) row(f, "parent", str(job, "parent"));
    json_t *retries = json_object_get(job, "retries");
    if (json_array_size(retries) > 0) {
        size_t o = 0, i;
        json_t *r;
        buf[0] = 0;
        json_array_foreach(retries, i, r)
        {
            if (o + 40 >= sizeof buf) {
                snprintf(buf + o, sizeof buf - o, ", ...");
                break;
            }
            o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "",
                                  json_string_value(r) ? json_string_value(r) : "?");
        }
        row(f, "retries", buf);
    }
}

/* fmt_job's rows of the outcome: the summary's figures, the log, the checkpoints. */
static void job_result_rows(FILE *f, json_t *job)
{
    char buf[1024];
    json_t *sum = json_object_get(job, "summary");
    if (json_is_object(sum)) {
        char acc[32], tl[32], trl[32], steps[24], wall[32], tp[32];
        num_cell(sum, "test_accuracy", "%.4f", acc, sizeof acc);
        num_cell(sum, "test_loss", "%.4f", tl, sizeof tl);
        num_cell(sum, "train_loss", "%.4f", trl, sizeof trl);
        int_cell(sum, "steps", steps, sizeof steps);
        num_cell(sum, "wall_s", "%.1f", wall, sizeof wall);
        if (json_is_integer(json_object_get(sum, "block_size"))) {
            /* a language model: next-token accuracy, loss in nats per token and its
             * perplexity, tokens per second (null when not measured: "-") */
            char ppl[32];
            num_cell(sum, "test_perplexity", "%.2f", ppl, sizeof ppl);
            num_cell(sum, "train_tokens_per_s", "%.0f", tp, sizeof tp);
            snprintf(buf, sizeof buf,
                     "next-token accuracy %s, test loss %s (perplexity %s), train loss %s; %s step%s, %s s, %s "
                     "tokens/s",
                     acc, tl, ppl, trl, steps, plural(steps), wall, tp);
        } else {
            num_cell(sum, "train_samples_per_s", "%.0f", tp, sizeof tp);
            snprintf(buf, sizeof buf, "test accuracy %s, test loss %s, train loss %s; %s step%s, %s s, %s samples/s",
                     acc, tl, trl, steps, plural(steps), wall, tp);
        }
        row(f, "result", buf);
        fmt_dataset(f, json_object_get(sum, "dataset"), sum);
    }
    if (*str(job, "log")) row(f, "log", str(job, "log"));
    if (*str(job, "checkpoint")) row(f, "checkpoint", str(job, "checkpoint"));
    if (json_is_object(json_object_get(job, "checkpoints")))
        fmt_checkpoints(f, json_object_get(job, "checkpoints"), json_is_integer(json_object_get(sum, "block_size")));
}

/* An integer field as text, "-" when it is null or absent (a stop whose note was lost). */
static const char *int_or_dash(json_t *o, const char *key, char *out, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v)) snprintf(out, len, "%lld", (long long)json_integer_value(v));
    else snprintf(out, len, "-");
    return out;
}

/* Stops with notice (docs/JOB_SPEC.md, "Stopping on notice"): how many, and the last one. */
static void job_interruption_rows(FILE *f, json_t *job)
{
    json_t *list = json_object_get(job, "interruptions");
    size_t n = json_array_size(list);
    if (n == 0) return;
    json_t *e = json_array_get(list, n - 1);
    long long total = json_integer_value(json_object_get(job, "interruptions_total"));
    char when[64], why[80], host[80], at[24], ck[24], lost[24], buf[512];
    fmt_time(num(e, "at"), when, sizeof when);
    fmt_clean(str(e, "reason"), 64, why, sizeof why);
    fmt_clean(*str(e, "host") ? str(e, "host") : "?", 64, host, sizeof host);
    snprintf(buf, sizeof buf, "%lld time%s; the last: %s on %s after step %s, resumed from step %s (%s lost), %s",
             total > 0 ? total : (long long)n, total == 1 || (total <= 0 && n == 1) ? "" : "s", why, host,
             int_or_dash(e, "at_step", at, sizeof at), int_or_dash(e, "checkpoint_step", ck, sizeof ck),
             int_or_dash(e, "lost_steps", lost, sizeof lost), when);
    row(f, "interrupted", buf);
}

void fmt_job(FILE *f, json_t *job, double now)
{
    row(f, "id", str(job, "id"));
    row(f, "name", str(job, "name"));
    if (*str(job, "owner")) row(f, "owner", str(job, "owner")); /* absent from jobs submitted before users */
    row(f, "state", str(job, "state"));
    if (*str(job, "reason")) row(f, "reason", str(job, "reason"));
    job_scheduling_rows(f, job, now);
    job_work_rows(f, job);
    job_time_rows(f, job, now);
    job_health_rows(f, job);
    job_interruption_rows(f, job);
    job_result_rows(f, job);
}

void fmt_problem(long status, const char *body, size_t body_len, char *out, size_t len)
{
    json_t *p = body && body_len ? json_loadb(body, body_len, 0, NULL) : NULL;
    const char *title = json_string_value(json_object_get(p, "title"));
    const char *detail = json_string_value(json_object_get(p, "detail"));
    char t[256], d[768], extra[160] = "";
    if (json_is_object(p) && (title || detail)) {
        fmt_clean(title ? title : "Error", 120, t, sizeof t);
        fmt_clean(detail ? detail : "", 600, d, sizeof d);
        const char *field = json_string_value(json_object_get(p, "field"));
        const char *param = json_string_value(json_object_get(p, "parameter"));
        if (field || param) {
            char v[96];
            fmt_clean(field ? field : param, 80, v, sizeof v);
            snprintf(extra, sizeof extra, ", %s %s", field ? "field" : "parameter", v);
        }
        snprintf(out, len, "%s%s%s (HTTP %ld%s)", t, *d ? ": " : "", d, status, extra);
    } else {
        /* Not ours (a proxy's page?): the first line of what came back. */
        char first[256] = "";
        if (body && body_len) {
            size_t n = strcspn(body, "\r\n");
            if (n > body_len) n = body_len;
            if (n > sizeof first - 1) n = sizeof first - 1;
            memcpy(first, body, n);
            first[n] = 0;
        }
        fmt_clean(first, 160, d, sizeof d);
        snprintf(out, len, "HTTP %ld%s%s", status, *d ? ": " : "", d);
    }
    json_decref(p);
}

void fmt_no_model(json_t *job, const char *file, char *out, size_t len)
{
    char id[80], reason[400];
    fmt_clean(str(job, "id"), 64, id, sizeof id);
    fmt_clean(str(job, "reason"), 300, reason, sizeof reason);
    const char *state = str(job, "state");
    size_t kept = json_array_size(json_object_get(json_object_get(job, "checkpoints"), "items"));
    int final = fmt_state_exit(state) >= 0;
    if (json_is_true(json_object_get(job, "simulated")))
        snprintf(out, len,
                 "job %s ran on a simulated cluster, whose ranks train no weights: there is no model to export", id);
    else if (final && strcmp(state, "SUCCEEDED") != 0 && kept == 0)
        /* The worker writes model.onnx with each checkpoint: none, no model, ever. */
        snprintf(out, len, "job %s %s before its first checkpoint%s%s%s, so it has no trained model to export", id,
                 strcmp(state, "CANCELLED") == 0 ? "was cancelled" : "failed", *reason ? " (" : "", reason,
                 *reason ? ")" : "");
    else if (final)
        snprintf(out, len, "job %s ended %s, but the coordinator has no %s for it (pacer logs %s may say why)", id,
                 state, file, id);
    else if (strcmp(state, "QUEUED") == 0)
        snprintf(out, len,
                 "job %s is QUEUED: it has no model yet; its worker writes one with each checkpoint and at the end", id);
    else
        snprintf(out, len,
                 "job %s is %s and has not written a checkpoint yet: its worker writes the model with each checkpoint "
                 "and at the end",
                 id, *state ? state : "in an unknown state");
}

int fmt_state_exit(const char *state)
{
    if (!state) return -1;
    if (strcmp(state, "SUCCEEDED") == 0) return CLI_EXIT_OK;
    if (strcmp(state, "FAILED") == 0) return CLI_EXIT_FAILED;
    if (strcmp(state, "CANCELLED") == 0) return CLI_EXIT_CANCELLED;
    return -1;
}

int fmt_json(FILE *f, json_t *j)
{
    int rc = json_dumpf(j, f, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
    fputc('\n', f);
    return rc;
}

int fmt_json_line(FILE *f, json_t *j)
{
    int rc = json_dumpf(j, f, JSON_COMPACT | JSON_REAL_PRECISION(15));
    fputc('\n', f);
    return rc;
}

void fmt_users(FILE *f, json_t *list)
{
    static const char *const H[] = {"NAME", "ROLE", "CREATED", "EXPIRES", "CREATED BY"};
    table_t *t = table_new(5, H);
    if (!t) return;
    size_t i;
    json_t *u;
    json_array_foreach(json_object_get(list, "users"), i, u)
    {
        char created[48] = "-", expires[48] = "never", by[80];
        if (num(u, "created") > 0) fmt_time(num(u, "created"), created, sizeof created);
        if (num(u, "expires") > 0) fmt_time(num(u, "expires"), expires, sizeof expires);
        fmt_clean(str(u, "created_by"), 40, by, sizeof by);
        const char *cells[] = {str(u, "name"), str(u, "role"), created, expires, by};
        table_add(t, cells);
    }
    table_print(t, f);
    table_free(t);
}

void fmt_whoami(FILE *f, json_t *who)
{
    const char *name = str(who, "name"), *auth = str(who, "auth");
    char expires[48] = "never", how[160];
    if (num(who, "expires") > 0) fmt_time(num(who, "expires"), expires, sizeof expires);
    /* "none" alone would read as "not authenticated": say what it means here. */
    if (strcmp(auth, "none") == 0)
        snprintf(how, sizeof how,
                 "none (the coordinator has no token: it checks none, every local caller is the admin)");
    else snprintf(how, sizeof how, "%s", auth);
    row(f, "name", *name ? name : "-");
    row(f, "role", str(who, "role"));
    row(f, "auth", how);
    row(f, "expires", expires);
}
