/* cli/progress.c - see progress.h. */
#include "progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

void progress_init(progress_t *p, const char *job)
{
    memset(p, 0, sizeof *p);
    snprintf(p->job, sizeof p->job, "%s", job ? job : "");
}

void progress_free(progress_t *p)
{
    free(p->ranks);
    p->ranks = NULL;
    p->nranks = 0;
}

/* Makes ranks 0..n-1 exist; 0, or -1 when n is out of range or memory is short. */
static int ensure(progress_t *p, long long n)
{
    if (n < 0 || n > PROGRESS_RANKS_MAX) return -1;
    if (n <= p->nranks) return 0;
    progress_rank_t *r = realloc(p->ranks, (size_t)n * sizeof *r);
    if (!r) return -1;
    for (long long i = p->nranks; i < n; i++) {
        memset(&r[i], 0, sizeof r[i]);
        r[i].loss = r[i].samples_per_s = r[i].staleness = r[i].test_accuracy = NAN;
        r[i].epoch = r[i].step = r[i].batch = -1;
    }
    p->ranks = r;
    p->nranks = (int)n;
    return 0;
}

static void copy_str(char *dst, size_t len, json_t *v)
{
    if (json_is_string(v)) fmt_clean(json_string_value(v), 0, dst, len);
}

static void take_int(long long *dst, json_t *v)
{
    if (json_is_integer(v)) *dst = (long long)json_integer_value(v);
}

static void take_num(double *dst, json_t *v)
{
    if (json_is_number(v)) *dst = json_number_value(v);
}

/* A metrics record or a node hash (the same names, but "updated" for "time"). */
static void take_rank(progress_rank_t *r, json_t *o)
{
    r->known = 1;
    copy_str(r->role, sizeof r->role, json_object_get(o, "role"));
    copy_str(r->host, sizeof r->host, json_object_get(o, "host"));
    take_int(&r->epoch, json_object_get(o, "epoch"));
    take_int(&r->step, json_object_get(o, "step"));
    take_int(&r->batch, json_object_get(o, "batch"));
    take_num(&r->loss, json_object_get(o, "loss"));
    take_num(&r->samples_per_s, json_object_get(o, "samples_per_s"));
    take_num(&r->staleness, json_object_get(json_object_get(o, "staleness"), "mean"));
    take_num(&r->test_accuracy, json_object_get(o, "test_accuracy"));
    take_num(&r->time, json_object_get(o, "time"));
    take_num(&r->time, json_object_get(o, "updated"));
    r->kind[0] = 0;
    copy_str(r->kind, sizeof r->kind, json_object_get(o, "kind"));
}

static void take_state(progress_t *p, json_t *o)
{
    json_t *st = json_object_get(o, "state");
    if (!json_is_string(st)) return;
    copy_str(p->state, sizeof p->state, st);
    p->reason[0] = 0;
    copy_str(p->reason, sizeof p->reason, json_object_get(o, "reason"));
}

/* A positive integer field, else 0. */
static int positive(json_t *v)
{
    return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= (1 << 24)
               ? (int)json_integer_value(v)
               : 0;
}

/* A language model's window: the summary's, else the built-in GPT's or the data set's
 * (the GPT's default 64 when neither gives one); 0 = not known (an imported model before
 * its summary: its speed is then shown in samples/s). */
static void take_lm(progress_t *p, json_t *job)
{
    json_t *spec = json_object_get(job, "spec"), *ds = json_object_get(spec, "dataset");
    const char *format = json_string_value(json_object_get(ds, "format"));
    p->lm = format && (strcmp(format, "text") == 0 || strcmp(format, "tokens") == 0);
    if (!p->lm) return;
    json_t *gpt = json_object_get(json_object_get(spec, "model"), "gpt");
    int block = positive(json_object_get(json_object_get(job, "summary"), "block_size"));
    if (!block) block = positive(json_object_get(gpt, "block_size"));
    if (!block) block = positive(json_object_get(ds, "block_size"));
    if (!block && json_is_object(gpt)) block = 64;
    p->block = block;
}

void progress_job(progress_t *p, json_t *job)
{
    copy_str(p->name, sizeof p->name, json_object_get(job, "name"));
    take_state(p, job);
    take_lm(p, job);
    json_t *w = json_object_get(job, "world");
    if (json_is_integer(w)) ensure(p, (long long)json_integer_value(w));
}

void progress_nodes(progress_t *p, json_t *nodes)
{
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(nodes, "ranks"), i, r)
    {
        json_t *k = json_object_get(r, "rank");
        if (!json_is_integer(k)) continue;
        long long rank = (long long)json_integer_value(k);
        if (rank < 0 || ensure(p, rank + 1) != 0) continue;
        if (json_object_size(r) > 1) take_rank(&p->ranks[rank], r); /* more than "rank": it reported */
    }
}

int progress_event(progress_t *p, json_t *ev, int *rank)
{
    const char *type = json_string_value(json_object_get(ev, "type"));
    const char *job = json_string_value(json_object_get(ev, "job"));
    if (!type || (job && strcmp(job, p->job) != 0)) return PROGRESS_NONE;
    if (strcmp(type, "state") == 0) {
        take_state(p, ev);
        return PROGRESS_STATE;
    }
    if (strcmp(type, "metrics") == 0) {
        json_t *k = json_object_get(ev, "rank");
        if (!json_is_integer(k)) return PROGRESS_NONE;
        long long r = (long long)json_integer_value(k);
        if (r < 0 || ensure(p, r + 1) != 0) return PROGRESS_NONE;
        take_rank(&p->ranks[r], ev);
        if (rank) *rank = (int)r;
        return PROGRESS_RANK;
    }
    if (strcmp(type, "plan") == 0) {
        take_int(&p->plan_version, json_object_get(ev, "version"));
        size_t i, o = 0;
        json_t *b;
        p->plan[0] = 0;
        json_array_foreach(json_object_get(ev, "batches"), i, b)
        {
            int k = snprintf(p->plan + o, sizeof p->plan - o, "%s%lld", i ? "," : "", (long long)json_integer_value(b));
            if (k < 0 || o + (size_t)k >= sizeof p->plan - 4) {
                snprintf(p->plan + o, sizeof p->plan - o, ",...");
                break;
            }
            o += (size_t)k;
        }
        return PROGRESS_PLAN;
    }
    return PROGRESS_NONE;
}

/* ---- lines ---------------------------------------------------------------------------------- */

#define ROW_FMT "%4s  %-6s  %-16s  %5s  %7s  %5s  %8s  %9s  %5s  %8s"

static void cell_int(char *out, size_t len, long long v)
{
    if (v >= 0) snprintf(out, len, "%lld", v);
    else snprintf(out, len, "-");
}

static void cell_num(char *out, size_t len, const char *fmt, double v)
{
    if (isfinite(v)) snprintf(out, len, fmt, v);
    else snprintf(out, len, "-");
}

/* One rank's row, without a line end; age < 0 leaves the AGE column out. */
static void rank_row(const progress_t *p, int rank, double age, char *out, size_t len)
{
    const progress_rank_t *r = &p->ranks[rank];
    char id[16], epoch[24], step[24], batch[24], loss[32], sps[32], stale[32], acc[32], host[20];
    snprintf(id, sizeof id, "%d", rank);
    if (!r->known) {
        snprintf(out, len, "%4s  %s", id, "(no report yet)");
        return;
    }
    cell_int(epoch, sizeof epoch, r->epoch);
    cell_int(step, sizeof step, r->step);
    cell_int(batch, sizeof batch, r->batch);
    cell_num(loss, sizeof loss, "%.4f", r->loss);
    if (p->block > 0) cell_num(sps, sizeof sps, "%.0f", r->samples_per_s * p->block); /* tokens/s */
    else cell_num(sps, sizeof sps, "%.1f", r->samples_per_s);
    cell_num(stale, sizeof stale, "%.1f", r->staleness);
    cell_num(acc, sizeof acc, "%.4f", r->test_accuracy);
    fmt_clean(r->host, 16, host, sizeof host);
    int n = snprintf(out, len, ROW_FMT, id, r->role[0] ? r->role : "-", host[0] ? host : "-", epoch, step, batch, loss,
                     sps, stale, acc);
    if (age >= 0 && n > 0 && (size_t)n < len) {
        char a[16];
        if (r->time > 0) fmt_age(age, a, sizeof a);
        else snprintf(a, sizeof a, "-");
        snprintf(out + n, len - (size_t)n, "  %5s", a);
    }
}

/* The speed's and the accuracy's column names: a language model's in tokens/s (when its
 * window is known) and next-token accuracy. */
static const char *speed_name(const progress_t *p) { return p->block > 0 ? "TOKENS/S" : "SAMPLES/S"; }
static const char *acc_name(const progress_t *p) { return p->lm ? "NEXT_ACC" : "TEST_ACC"; }

void progress_print_header(const progress_t *p, FILE *f)
{
    fprintf(f, ROW_FMT "\n", "RANK", "ROLE", "HOST", "EPOCH", "STEP", "BATCH", "LOSS", speed_name(p), "STALE",
            acc_name(p));
}

void progress_print_rank(const progress_t *p, int rank, FILE *f)
{
    if (rank < 0 || rank >= p->nranks) return;
    char line[256];
    rank_row(p, rank, -1, line, sizeof line);
    fprintf(f, "%s\n", line);
}

int progress_print_due(progress_t *p, int rank, double now, double every, FILE *f)
{
    if (rank < 0 || rank >= p->nranks || !p->ranks[rank].known) return 0;
    progress_rank_t *r = &p->ranks[rank];
    const int step = strcmp(r->kind, "step") == 0;
    if (step && (every <= 0 || (r->printed[0] && now - r->printed_at < every))) return 0;
    char line[sizeof r->printed];
    rank_row(p, rank, -1, line, sizeof line);
    if (strcmp(line, r->printed) == 0) return 0;
    fprintf(f, "%s\n", line);
    snprintf(r->printed, sizeof r->printed, "%s", line);
    r->printed_at = now;
    return 1;
}

void progress_print_state(const progress_t *p, FILE *f)
{
    fprintf(f, "-- %s %s%s%s\n", p->job, p->state, p->reason[0] ? ": " : "", p->reason);
}

void progress_print_plan(const progress_t *p, FILE *f)
{
    fprintf(f, "-- %s batch plan v%lld: %s\n", p->job, p->plan_version, p->plan);
}

/* ---- frames ---------------------------------------------------------------------------------- */

static void frame_line(FILE *f, const char *text, int cols)
{
    char cut[1024];
    fmt_clean(text, (size_t)(cols > 1 ? cols - 1 : 1), cut, sizeof cut);
    fprintf(f, "\r\033[2K%s\n", cut);
}

void progress_draw(progress_t *p, FILE *f, double now, int cols, int rows)
{
    if (cols <= 0) cols = 80;
    if (rows <= 0) rows = 24;
    if (p->drawn > 0) fprintf(f, "\033[%dA", p->drawn);
    char line[512];
    int known = 0;
    for (int i = 0; i < p->nranks; i++) known += p->ranks[i].known;
    int n = snprintf(line, sizeof line, "%s  %s  %s  %d/%d ranks reporting", p->job, p->name[0] ? p->name : "-",
                     p->state[0] ? p->state : "?", known, p->nranks);
    if (p->plan_version > 0 && n > 0 && (size_t)n < sizeof line)
        snprintf(line + n, sizeof line - (size_t)n, "  plan v%lld [%s]", p->plan_version, p->plan);
    frame_line(f, line, cols);
    int lines = 1;
    if (p->reason[0] && fmt_state_exit(p->state) < 0) {
        snprintf(line, sizeof line, "  %s", p->reason);
        frame_line(f, line, cols);
        lines++;
    }
    snprintf(line, sizeof line, ROW_FMT "  %5s", "RANK", "ROLE", "HOST", "EPOCH", "STEP", "BATCH", "LOSS",
             speed_name(p), "STALE", acc_name(p), "AGE");
    frame_line(f, line, cols);
    lines++;
    /* Keep the frame within the terminal: a frame taller than it cannot be redrawn. */
    int room = rows - lines - 1;
    if (room < 1) room = 1;
    int shown = p->nranks <= room ? p->nranks : room - 1;
    if (shown < 0) shown = 0;
    for (int i = 0; i < shown; i++) {
        rank_row(p, i, now - p->ranks[i].time, line, sizeof line);
        frame_line(f, line, cols);
        lines++;
    }
    if (shown < p->nranks) {
        snprintf(line, sizeof line, "  ... %d more ranks (a taller terminal shows them)", p->nranks - shown);
        frame_line(f, line, cols);
        lines++;
    }
    fprintf(f, "\033[J"); /* whatever the previous, taller frame left below */
    fflush(f);
    p->drawn = lines;
}
