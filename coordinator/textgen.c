/* coordinator/textgen.c - see textgen.h. */
#include "textgen.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coord_internal.h"
#include "jsonbody.h"
#include "modelstore.h"

extern char **environ;

/* An integer field in [lo, hi] into *out: 0, or -1 with err. */
static int int_field(const char *key, json_t *v, long long lo, long long hi, long long *out, char *err, size_t errlen)
{
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "%s: must be an integer from %lld to %lld", key, lo, hi);
        return -1;
    }
    *out = json_integer_value(v);
    return 0;
}

static int set_field(genreq_t *r, const char *key, json_t *v, char *err, size_t errlen)
{
    long long n = 0;
    if (strcmp(key, "prompt") == 0) {
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > GENREQ_PROMPT_MAX ||
            strlen(json_string_value(v)) != json_string_length(v)) {
            snprintf(err, errlen, "prompt: must be a string of 1 to %d bytes without NUL", GENREQ_PROMPT_MAX);
            return -1;
        }
        r->prompt_len = json_string_length(v);
        r->prompt = strdup(json_string_value(v));
        if (!r->prompt) snprintf(err, errlen, "out of memory");
        return r->prompt ? 0 : -1;
    }
    if (strcmp(key, "max_tokens") == 0) {
        if (int_field(key, v, 1, GENREQ_MAX_TOKENS, &n, err, errlen) != 0) return -1;
        r->max_tokens = (int)n;
    } else if (strcmp(key, "top_k") == 0) {
        if (int_field(key, v, 0, GENREQ_TOP_K_MAX, &n, err, errlen) != 0) return -1;
        r->top_k = (int)n;
    } else if (strcmp(key, "seed") == 0) {
        if (int_field(key, v, 0, LLONG_MAX, &n, err, errlen) != 0) return -1;
        r->seed = n;
    } else if (strcmp(key, "temperature") == 0) {
        const double t = json_is_number(v) ? json_number_value(v) : -1;
        if (!(t >= 0 && t <= GENREQ_TEMPERATURE_MAX)) {
            snprintf(err, errlen, "temperature: must be a number from 0 (greedy) to %g", GENREQ_TEMPERATURE_MAX);
            return -1;
        }
        /* a subnormal one would reach pacer-generate as a number its own parser refuses
         * (strtod's underflow), and come back naming its flag instead of this field */
        if (t > 0 && t < DBL_MIN) {
            snprintf(err, errlen,
                     "temperature: %g is below the smallest normal number %.17g: give 0 (greedy) or a "
                     "number from %.17g to %g",
                     t, DBL_MIN, DBL_MIN, GENREQ_TEMPERATURE_MAX);
            return -1;
        }
        r->temperature = t;
    } else if (strcmp(key, "checkpoint") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : NULL;
        if (!s || !*s || json_string_length(v) >= GENREQ_CHECKPOINT_MAX || strchr(s, '/') || s[0] == '.') {
            snprintf(err, errlen, "checkpoint: must be \"latest\", \"best\" or a checkpoint's file name");
            return -1;
        }
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", s);
    } else if (strcmp(key, "precision") == 0) {
        const char *s = json_is_string(v) ? json_string_value(v) : "";
        if (strcmp(s, "fp32") != 0 && strcmp(s, "bf16") != 0) {
            snprintf(err, errlen, "precision: must be \"fp32\" or \"bf16\" (the job's own when left out)");
            return -1;
        }
        snprintf(r->precision, sizeof r->precision, "%s", s);
    } else {
        snprintf(err, errlen,
                 "%.60s: unknown field (prompt, max_tokens, temperature, top_k, seed, checkpoint, precision)", key);
        return -1;
    }
    return 0;
}

int genreq_parse(const char *body, size_t len, genreq_t *out, char *err, size_t errlen)
{
    *out = (genreq_t){.max_tokens = 64, .temperature = 1.0, .checkpoint = "latest"};
    if (len > GENREQ_BODY_MAX) {
        snprintf(err, errlen, "body: at most %d bytes", GENREQ_BODY_MAX);
        return -1;
    }
    json_error_t je;
    json_t *root = body && len ? json_loadb(body, len, JSON_REJECT_DUPLICATES, &je) : NULL;
    if (body && len && !root) return jsonbody_error(&je, "body", err, errlen);
    if (!json_is_object(root)) {
        snprintf(err, errlen, "body: must be a JSON object {\"prompt\": \"...\", \"max_tokens\": N, ...}");
        json_decref(root);
        return -1;
    }
    const char *key;
    json_t *v;
    int rc = 0;
    json_object_foreach(root, key, v)
    {
        if (set_field(out, key, v, err, errlen) != 0) {
            rc = -1;
            break;
        }
    }
    json_decref(root);
    if (rc == 0 && !out->prompt) {
        snprintf(err, errlen, "prompt: missing (the text to continue)");
        rc = -1;
    }
    if (rc != 0) genreq_free(out);
    return rc;
}

void genreq_free(genreq_t *r)
{
    free(r->prompt);
    r->prompt = NULL;
}

/* argv of pacer-generate for r into buf's strings (args holds 24 pointers); models_dir
 * NULL but for an uploaded model's job. */
static void build_argv(const char *bin, const char *spec, const char *ckdir, const genreq_t *r, const char *models_dir,
                       char num[4][32], char lim[2][32], const char **args)
{
    snprintf(num[0], 32, "%d", r->max_tokens);
    snprintf(num[1], 32, "%.17g", r->temperature);
    snprintf(num[2], 32, "%d", r->top_k);
    snprintf(num[3], 32, "%lld", r->seed);
    snprintf(lim[0], 32, "%d", GENERATE_MEMORY_MB);
    snprintf(lim[1], 32, "%d", GENERATE_SECONDS);
    const char *a[] = {bin,           "--spec",
                       spec,          "--checkpoint-dir",
                       ckdir,         "--checkpoint",
                       r->checkpoint, "--max-tokens",
                       num[0],        "--temperature",
                       num[1],        "--top-k",
                       num[2],        "--seed",
                       num[3],        "--max-memory-mb",
                       lim[0],        "--max-seconds",
                       lim[1],        NULL,
                       NULL,          NULL};
    memcpy(args, a, sizeof a);
    int n = 19;
    if (r->precision[0]) args[n++] = "--precision", args[n++] = r->precision;
    if (models_dir) args[n++] = "--models-dir", args[n++] = models_dir;
    args[n] = NULL;
}

static int spawn(const char *const *argv, int in_fd, int out_fd, pid_t *pid, char *err, size_t errlen)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t empty, def;
    posix_spawn_file_actions_init(&fa);
    posix_spawnattr_init(&at);
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    /* Redis sockets and the HTTP listener must not leak into it */
    posix_spawn_file_actions_addclosefrom_np(&fa, 3);
    sigemptyset(&empty);
    sigemptyset(&def);
    const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&def, sigs[i]);
    posix_spawnattr_setsigmask(&at, &empty);
    posix_spawnattr_setsigdefault(&at, &def);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const int rc = posix_spawn(pid, argv[0], &fa, &at, (char *const *)argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    if (rc != 0) snprintf(err, errlen, "cannot start %s: %s", argv[0], strerror(rc));
    return rc == 0 ? 0 : -1;
}

/* Whether the spec at path trains an uploaded model ("model": {"onnx": NAME}), its name into
 * name, and on a data set of text or token ids (*text): an imported language model
 * generates (pacer-generate finds it in the models directory as a worker does); one on
 * images has no tokens to turn a prompt into. */
static int imported_model(const char *path, char *name, size_t len, int *text)
{
    json_t *spec = json_load_file(path, 0, NULL);
    const json_t *model = json_object_get(spec, "model");
    const char *onnx = json_string_value(json_object_get(model, "onnx"));
    const char *format = json_string_value(json_object_get(json_object_get(spec, "dataset"), "format"));
    *text = format && (strcmp(format, "text") == 0 || strcmp(format, "tokens") == 0);
    if (onnx) snprintf(name, len, "%s", onnx);
    json_decref(spec);
    return onnx != NULL;
}

int coord_generate_start(coordinator_t *c, const char *id, const genreq_t *r, genproc_t *p, char *err, size_t errlen)
{
    char spec[PATH_MAX], ckdir[PATH_MAX], dir[PATH_MAX], bin[PATH_MAX + 32], num[4][32], lim[2][32];
    const char *argv[24];
    struct stat st;
    *p = (genproc_t){.pid = -1, .fd = -1};
    if (coord_job_path(c, id, "spec.json", spec, sizeof spec) != 0 ||
        coord_job_path(c, id, "checkpoints", ckdir, sizeof ckdir) != 0 || stat(spec, &st) != 0) {
        snprintf(err, errlen, "job %s has not started: it has no checkpoint to generate from", id);
        return COORD_ESTATE;
    }
    char model[128], models[PATH_MAX];
    int text = 0;
    const int imported = imported_model(spec, model, sizeof model, &text);
    if (imported && !text) {
        snprintf(err, errlen,
                 "job %s trains the uploaded ONNX model %s on a data set that is neither text nor tokens: "
                 "it is no language model, and nothing turns a prompt into its input",
                 id, model);
        return COORD_GENERATE_IMPORTED;
    }
    if (imported) modelstore_dir(c, models, sizeof models);
    snprintf(dir, sizeof dir, "%s", c->worker);
    snprintf(bin, sizeof bin, "%s/pacer-generate", dirname(dir));
    build_argv(bin, spec, ckdir, r, imported ? models : NULL, num, lim, argv);
    int in[2] = {-1, -1}, out[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        goto fail;
    }
    if (spawn(argv, in[0], out[1], &p->pid, err, errlen) != 0) goto fail;
    close(in[0]);
    close(out[1]);
    /* at most 32 KiB into a pipe of 64: never blocks; a child gone early is EPIPE, and the
     * caller ignores SIGPIPE (coordinator.h) */
    const ssize_t w = write(in[1], r->prompt, r->prompt_len);
    (void)w;
    close(in[1]);
    p->fd = out[0];
    return COORD_OK;
fail:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0) close(in[i]);
        if (out[i] >= 0) close(out[i]);
    }
    return COORD_EINTERNAL;
}

int coord_generate_end(genproc_t *p, int ended)
{
    if (p->fd >= 0) close(p->fd);
    p->fd = -1;
    if (p->pid <= 0) return -1;
    int status = 0;
    pid_t w = waitpid(p->pid, &status, ended ? 0 : WNOHANG);
    if (w == 0) {
        kill(p->pid, SIGKILL);
        w = waitpid(p->pid, &status, 0);
    }
    p->pid = -1;
    return w > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}
