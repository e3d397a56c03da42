/* generate/main.c - pacer-generate: text from a job's checkpoint, in a process of its
 * own so that a model never grows the coordinator (which spawns it for
 * POST /api/v1/jobs/{id}/generate).
 *
 *   pacer-generate --spec SPEC --checkpoint-dir DIR [--checkpoint latest|best|FILE]
 *                  [--max-tokens N] [--temperature T] [--top-k K] [--seed S]
 *                  [--max-memory-mb M] [--max-seconds S] [--models-dir DIR]
 *                  (the prompt on stdin)
 *
 * The job's model is the built-in GPT (model/generate.h's cached forward) or an imported
 * language model (an ONNX file, or an upload found in --models-dir as the worker finds it,
 * worker/modelfetch.h), run through its own graph.
 *
 * Its address space and CPU time are bounded (setrlimit) before anything is read. It prints
 * one JSON line per token as it comes, {"token": ID, "text": "..."} (the text the token
 * completes: a character cut between tokens waits for its last byte; bytes that are no UTF-8
 * become U+FFFD), then {"done": true, "text", "tokens", "prompt_tokens", "prompt_truncated",
 * "prompt_dropped", "tokens_per_s", "checkpoint"}. On a refusal it prints {"error": MESSAGE}
 * and exits GENERATE_EXIT_BAD (the request's fault: 400), GENERATE_EXIT_CONFLICT (no such
 * checkpoint, not a text GPT job: 409), or 1 (anything else). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "blas_core.h"
#include "checkpoint.h"
#include "ckptdir.h"
#include "cpu_isa.h"
#include "generate.h"
#include "gpt.h"
#include "lora.h"
#include "matmul.h"
#include "modelfetch.h"
#include "onnx_import.h"
#include "numarg.h"
#include "spec.h"
#include "tokenizer.h"
#include "utf8.h"

#define GENERATE_EXIT_BAD 2
#define GENERATE_EXIT_CONFLICT 3
#define GENERATE_MAX_PROMPT_BYTES 32768

typedef struct {
    const char *spec, *dir, *checkpoint;
    const char *models_dir; /* uploaded models: DIR/SHA256.onnx */
    gen_opts_t o;
    long memory_mb, seconds;
    const char *precision; /* fp32 | bf16; NULL: the job's spec's */
    int kv_cache;          /* --kv-cache on (1, the default) or off */
} gen_args_t;

/* {"error": msg} on stdout; returns code. */
static int fail(int code, const char *msg)
{
    json_t *o = json_pack("{s:s}", "error", msg);
    char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
    printf("%s\n", s ? s : "{\"error\":\"out of memory\"}");
    fflush(stdout);
    free(s);
    json_decref(o);
    return code;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: pacer-generate --spec SPEC --checkpoint-dir DIR [--checkpoint latest|best|FILE]\n"
            "       [--max-tokens 1..%d] [--temperature 0..%g] [--top-k 0..%d] [--seed S]\n"
            "       [--max-memory-mb M] [--max-seconds S] [--precision fp32|bf16] [--models-dir DIR]\n"
            "       [--kv-cache on|off]\n"
            "       (the prompt on stdin, at most %d bytes; the precision defaults to the job's; with the\n"
            "       key/value cache off each token recomputes the window: the same tokens, slower)\n",
            GEN_MAX_TOKENS, GEN_MAX_TEMPERATURE, GEN_MAX_TOP_K, GENERATE_MAX_PROMPT_BYTES);
    return GENERATE_EXIT_BAD;
}

/* One option's value into a: 0, or -1 with err naming the option. */
static int set_option(gen_args_t *a, const char *k, const char *v, char *err, size_t errlen)
{
    long n = 0;
    double d = 0;
    int rc = 0;
    if (strcmp(k, "--spec") == 0) a->spec = v;
    else if (strcmp(k, "--checkpoint-dir") == 0) a->dir = v;
    else if (strcmp(k, "--checkpoint") == 0) a->checkpoint = v;
    else if (strcmp(k, "--models-dir") == 0) a->models_dir = v;
    else if (strcmp(k, "--max-tokens") == 0) rc = numarg_long(v, 1, GEN_MAX_TOKENS, &n), a->o.max_tokens = (int)n;
    else if (strcmp(k, "--temperature") == 0) rc = numarg_double(v, 0, GEN_MAX_TEMPERATURE, &d), a->o.temperature = d;
    else if (strcmp(k, "--top-k") == 0) rc = numarg_long(v, 0, GEN_MAX_TOP_K, &n), a->o.top_k = (int)n;
    else if (strcmp(k, "--seed") == 0) rc = numarg_long(v, 0, 0x7fffffffffffffffL, &n), a->o.seed = (uint64_t)n;
    else if (strcmp(k, "--max-memory-mb") == 0) rc = numarg_long(v, 16, 1L << 24, &a->memory_mb);
    else if (strcmp(k, "--max-seconds") == 0) rc = numarg_long(v, 1, 86400, &a->seconds);
    else if (strcmp(k, "--precision") == 0) {
        mm_precision_t p;
        if (mm_precision_parse(v, &p) != 0) {
            snprintf(err, errlen, "--precision: %.32s is neither fp32 nor bf16", v);
            return -1;
        }
        a->precision = v;
    } else if (strcmp(k, "--kv-cache") == 0) {
        if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
            snprintf(err, errlen, "--kv-cache: %.32s is neither on nor off", v);
            return -1;
        }
        a->kv_cache = strcmp(v, "on") == 0;
    } else {
        snprintf(err, errlen, "unknown option %s", k);
        return -1;
    }
    if (rc != 0) snprintf(err, errlen, "%s: %s is not a number in range", k, v);
    return rc;
}

static int parse_args(int argc, char **argv, gen_args_t *a, char *err, size_t errlen)
{
    *a = (gen_args_t){.checkpoint = "latest",
                      .o = {.max_tokens = 64, .temperature = 1.0, .top_k = 0, .seed = 0},
                      .memory_mb = 4096,
                      .seconds = 120,
                      .kv_cache = 1};
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            snprintf(err, errlen, "%s: a value is missing", argv[i]);
            return -1;
        }
        if (set_option(a, argv[i], argv[i + 1], err, errlen) != 0) return -1;
    }
    if (!a->spec || !a->dir) {
        snprintf(err, errlen, "--spec and --checkpoint-dir are required");
        return -1;
    }
    return 0;
}

static void limit(long memory_mb, long seconds)
{
    const struct rlimit as = {.rlim_cur = (rlim_t)memory_mb << 20, .rlim_max = (rlim_t)memory_mb << 20};
    const struct rlimit cpu = {.rlim_cur = (rlim_t)seconds, .rlim_max = (rlim_t)seconds + 1};
    setrlimit(RLIMIT_AS, &as);
    setrlimit(RLIMIT_CPU, &cpu);
}

/* The checkpoint file named by which: "latest" (DIR/NAME.ckpt), "best" (the highest test
 * accuracy the directory keeps), or one of the linked names the directory lists (never a
 * path: a name from a request must not reach outside the job's directory). 0, or
 * GENERATE_EXIT_CONFLICT / GENERATE_EXIT_BAD with err. */
static int resolve_checkpoint(const char *dir, const char *name, const char *which, char *out, size_t len, char *err,
                              size_t errlen)
{
    ckpt_entry_t *e = malloc(CKPTDIR_MAX * sizeof *e);
    long long bytes = 0;
    const int n = e ? ckptdir_list(dir, name, e, CKPTDIR_MAX, &bytes, err, errlen) : -1;
    int found = -1;
    for (int i = 0; i < n && found < 0; i++)
        if ((strcmp(which, "latest") == 0 && e[i].latest) || (strcmp(which, "best") == 0 && e[i].best) ||
            strcmp(which, e[i].file) == 0)
            found = i;
    int rc = 0;
    if (n < 0) rc = 1;
    else if (found < 0) {
        const int named = strcmp(which, "latest") != 0 && strcmp(which, "best") != 0;
        snprintf(err, errlen,
                 n == 0  ? "checkpoint: the job has no checkpoint yet"
                 : named ? "checkpoint: %s is not one of the job's checkpoints"
                         : "checkpoint: the job has no %s checkpoint (best needs an evaluated one)",
                 which);
        rc = n == 0 || !named ? GENERATE_EXIT_CONFLICT : GENERATE_EXIT_BAD;
    } else if (snprintf(out, len, "%s/%s", dir, e[found].file) >= (int)len) {
        snprintf(err, errlen, "checkpoint: %s: path too long", dir);
        rc = 1;
    }
    free(e);
    return rc;
}

/* The built-in GPT of the job's spec, sized as the worker sized it. */
static int create_gpt(const job_spec_t *spec, const tokenizer_t *tok, model_t **m, char *err, size_t errlen)
{
    char why[1024];
    const model_gpt_t g = {.layers = spec->gpt.layers,
                           .heads = spec->gpt.heads,
                           .embd = spec->gpt.embd,
                           .block = spec->gpt.block_size       ? spec->gpt.block_size
                                    : spec->dataset.block_size ? spec->dataset.block_size
                                                               : 64,
                           /* as the worker sized it: a token data set's vocab_size, else the tokenizer's */
                           .vocab = spec->gpt.vocab_size       ? spec->gpt.vocab_size
                                    : spec->dataset.vocab_size ? spec->dataset.vocab_size
                                                               : tokenizer_vocab_size(tok),
                           .bias = spec->gpt.bias,
                           .tie = spec->gpt.tie_embeddings};
    if (model_create_gpt(spec->model, &g, 1, m, why, sizeof why) != 0) {
        snprintf(err, errlen, "the job's model: %s", why);
        return 1;
    }
    return 0;
}

/* The imported model of the job's spec (an upload's bytes, else its file), one window at a
 * time; a graph that is no language model is the job's kind, not the request's fault. */
static int import_model(const job_spec_t *spec, model_t **m, char *err, size_t errlen)
{
    char why[1024];
    const uint8_t *bytes;
    size_t n;
    int rc = spec->model_sha256[0] ? modelfetch_bytes(spec->model_onnx, spec->model_sha256, &bytes, &n, why, sizeof why)
                                   : 0;
    if (rc == 0)
        rc = spec->model_sha256[0] ? onnx_import_buffer(bytes, n, spec->model, 1, m, why, sizeof why)
                                   : onnx_import_file(spec->model_onnx, spec->model, 1, m, why, sizeof why);
    if (rc != 0) {
        snprintf(err, errlen, "the job's model: %s", why);
        return 1;
    }
    if (gen_graph_check(*m, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
        return GENERATE_EXIT_CONFLICT;
    }
    return 0;
}

/* The model of the job's spec (built-in or imported), its weights from path, and the
 * tokenizer beside it. */
static int load_model(const job_spec_t *spec, const char *path, model_t **m, tokenizer_t **tok, char *err, size_t errlen)
{
    char why[1024];
    const int onnx = spec->model_onnx[0] != '\0';
    if ((!onnx && !spec_model_is_gpt(spec)) || !spec_dataset_is_text(spec)) {
        snprintf(err, errlen,
                 "the job is not a language model on a text data set: nothing turns a prompt into its tokens");
        return GENERATE_EXIT_CONFLICT;
    }
    if (!(*tok = tokenizer_load_for_checkpoint(path, why, sizeof why))) {
        snprintf(err, errlen, "the job's tokenizer: %s", why);
        return 1;
    }
    if (onnx) {
        const int rc = import_model(spec, m, err, errlen);
        if (rc != 0) return rc;
    } else {
        const int rc = create_gpt(spec, *tok, m, err, errlen);
        if (rc != 0) return rc;
    }
    /* a lora job's checkpoint holds its graph with adapters: generation reads the merged
     * weights of the graph without them (model/lora.h) */
    model_t *adapted = NULL;
    if (spec->lora.targets[0]) {
        const lora_opts_t o = {.rank = spec->lora.rank,
                               .alpha = (float)spec->lora.alpha,
                               .dropout = (float)spec->lora.dropout,
                               .targets = spec->lora.targets};
        if (model_lora_apply(*m, &o, &adapted, why, sizeof why) != 0) {
            snprintf(err, errlen, "the job's model: %s", why);
            return 1;
        }
    }
    /* the weights alone: the checkpoint's optimizer state is never read into memory */
    model_drop_optimizer_state(*m);
    if (adapted) model_drop_optimizer_state(adapted);
    ckpt_state_t st;
    int rc = checkpoint_load(path, adapted ? adapted : *m, NULL, &st, why, sizeof why);
    if (rc == 0 && adapted) model_lora_merge(adapted, *m);
    model_free(adapted);
    if (rc != 0) {
        snprintf(err, errlen, "%s", why);
        return 1;
    }
    return 0;
}

typedef struct {
    const tokenizer_t *tok;
    uint32_t *ids;
    size_t n, shown; /* tokens so far, bytes of their text printed */
} stream_t;

static int on_token(void *ctx, uint32_t token, int index)
{
    stream_t *s = ctx;
    s->ids[s->n++] = token;
    char *text = NULL, err[256];
    size_t len = 0;
    if (tokenizer_decode(s->tok, s->ids, s->n, &text, &len, err, sizeof err) != 0) return fail(1, err);
    char *clean = malloc(3 * (len - s->shown) + 1);
    if (!clean) {
        free(text);
        return fail(1, "out of memory");
    }
    /* U+FFFD for what is not UTF-8 (common/utf8.h): jansson refuses it, and the line would be lost */
    s->shown += utf8_sanitize(text + s->shown, len - s->shown, 0, clean, 3 * (len - s->shown) + 1);
    json_t *o = json_pack("{s:I, s:s}", "token", (json_int_t)token, "text", clean);
    free(clean);
    char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
    if (line) printf("%s\n", line);
    fflush(stdout);
    free(line);
    free(text);
    json_decref(o);
    return line ? 0 : 1;
}

/* The prompt from stdin, at most GENERATE_MAX_PROMPT_BYTES: its length, or -1. */
static long read_prompt(char *buf, size_t cap)
{
    size_t n = 0, r;
    while ((r = fread(buf + n, 1, cap - n, stdin)) > 0) n += r;
    return n >= cap ? -1 : (long)n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The final line: the whole answer's text and counts. */
static int summary(const tokenizer_t *tok, const stream_t *s, const gen_state_t *gs, size_t prompt_tokens, size_t cut,
                   double seconds, const char *ckpt)
{
    char *text = NULL, err[256];
    size_t len = 0;
    if (tokenizer_decode(tok, s->ids, s->n, &text, &len, err, sizeof err) != 0) return fail(1, err);
    char *clean = malloc(3 * len + 1);
    if (!clean) {
        free(text);
        return fail(1, "out of memory");
    }
    utf8_sanitize(text, len, 1, clean, 3 * len + 1);
    const char *slash = strrchr(ckpt, '/');
    json_t *o = json_pack("{s:b, s:s, s:I, s:I, s:b, s:I, s:f, s:s}", "done", 1, "text", clean, "tokens",
                          (json_int_t)s->n, "prompt_tokens", (json_int_t)(prompt_tokens - cut), "prompt_truncated",
                          cut > 0, "prompt_dropped", (json_int_t)cut, "tokens_per_s",
                          seconds > 0 ? (double)s->n / seconds : 0.0, "checkpoint", slash ? slash + 1 : ckpt);
    if (o) {
        /* a rate over no measured time is no figure: null, not 0 */
        if (!(seconds > 0)) json_object_set_new(o, "tokens_per_s", json_null());
        /* what the products ran on (kernels/cpu/matmul.h), as a job's summary says it */
        json_object_set_new(o, "precision", json_string(mm_precision_name(mm_precision())));
        json_object_set_new(o, "kernels", json_pack("{s:s}", "gemm", mm_kernel()));
        /* each position computed once, or why each token recomputed the window */
        const char *why = NULL;
        json_object_set_new(o, "kv_cache", json_boolean(gen_cached(gs, &why)));
        if (why) json_object_set_new(o, "kv_cache_off", json_string(why));
    }
    char *line = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(6)) : NULL;
    if (line) printf("%s\n", line);
    fflush(stdout);
    free(line);
    free(clean);
    free(text);
    json_decref(o);
    return line ? 0 : 1;
}

/* Encodes the prompt, generates and streams: the exit status. */
static int generate(const gen_args_t *a, model_t *m, const tokenizer_t *tok, const char *prompt, size_t plen,
                    const char *ckpt)
{
    char err[1024];
    uint32_t *ids = NULL;
    size_t n = 0, cut = 0;
    if (tokenizer_encode(tok, prompt, plen, &ids, &n, err, sizeof err) != 0) {
        char msg[1100];
        snprintf(msg, sizeof msg, "prompt: %s", err);
        return fail(GENERATE_EXIT_BAD, msg);
    }
    gen_state_t *gs = NULL;
    stream_t s = {.tok = tok, .ids = malloc((size_t)a->o.max_tokens * sizeof(uint32_t))};
    uint32_t *out = malloc((size_t)a->o.max_tokens * sizeof *out);
    int rc = 1;
    if (n == 0) rc = fail(GENERATE_EXIT_BAD, "prompt: empty (at least one token is needed to start from)");
    else if (!s.ids || !out) rc = fail(1, "out of memory");
    else if (gen_open(m, &gs, err, sizeof err) != 0) rc = fail(1, err);
    else {
        if (!a->kv_cache) gen_use_cache(gs, 0);
        const double t0 = now_s();
        gen_opts_t o = a->o;
        o.vocab_limit = tokenizer_vocab_size(tok); /* never an id the tokenizer cannot decode */
        const int k = gen_run(gs, ids, n, &o, on_token, &s, out, &cut, err, sizeof err);
        if (k < 0) rc = fail(1, err);
        else rc = summary(tok, &s, gs, n, cut, now_s() - t0, ckpt);
    }
    gen_close(gs);
    free(out);
    free(s.ids);
    free(ids);
    return rc;
}

int main(int argc, char **argv)
{
    blas_core_choose(argv); /* OpenBLAS's kernels by the CPU's flags (blas_core.h) */
    gen_args_t a;
    char err[2048], ckpt[4096];
    if (argc < 2) return usage();
    if (parse_args(argc, argv, &a, err, sizeof err) != 0) return fail(GENERATE_EXIT_BAD, err);
    limit(a.memory_mb, a.seconds);
    char *prompt = malloc(GENERATE_MAX_PROMPT_BYTES + 1);
    job_spec_t *spec = calloc(1, sizeof *spec);
    if (!prompt || !spec) return fail(1, "out of memory");
    const long plen = read_prompt(prompt, GENERATE_MAX_PROMPT_BYTES + 1);
    if (plen < 0) {
        snprintf(err, sizeof err, "prompt: longer than %d bytes", GENERATE_MAX_PROMPT_BYTES);
        return fail(GENERATE_EXIT_BAD, err);
    }
    /* an uploaded model is found as a rank finds it, imported while the spec is read */
    modelfetch_configure(a.models_dir, NULL, NULL);
    spec_set_onnx_loader(modelfetch_loader);
    if (spec_load_file(a.spec, spec, err, sizeof err) != 0) return fail(1, err);
    /* the matrix products' precision (kernels/cpu/matmul.h): the job's unless asked */
    mm_precision_t prec = MM_FP32;
    mm_precision_parse(a.precision ? a.precision : spec->precision, &prec);
    if (cpu_isa_env_error()) return fail(GENERATE_EXIT_BAD, cpu_isa_env_error());
    mm_set_precision(prec);
    mm_keep_all_weights(1); /* at bf16 each weight packed once for every token */
    int rc = resolve_checkpoint(a.dir, spec->name, a.checkpoint, ckpt, sizeof ckpt, err, sizeof err);
    if (rc != 0) return fail(rc, err);
    model_t *m = NULL;
    tokenizer_t *tok = NULL;
    rc = load_model(spec, ckpt, &m, &tok, err, sizeof err);
    if (rc == 0) rc = generate(&a, m, tok, prompt, (size_t)plen, ckpt);
    else fail(rc, err);
    model_free(m);
    tokenizer_free(tok);
    free(spec);
    free(prompt);
    return rc;
}
