/* cli/generate.c - `pacer generate ID PROMPT`: a thin caller of POST
 * /api/v1/jobs/{id}/generate. The coordinator owns every rule (bounds, defaults, who may
 * generate); the CLI only builds the request from the options given and prints the
 * answer: the text on stdout, the counts on stderr, so that `pacer generate ... > out.txt`
 * keeps the model's text alone. */
#include "calls.h"
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "format.h"

#define PROMPT_MAX (1u << 20) /* the API's body limit; the coordinator bounds prompts far below */

/* PROMPT, or standard input for "-" (bounded): a malloc'ed NUL-terminated string, or
 * NULL after printing why. */
static char *read_prompt(const char *arg)
{
    if (strcmp(arg, "-") != 0) return strdup(arg);
    char *buf = malloc(PROMPT_MAX + 1);
    size_t n = buf ? fread(buf, 1, PROMPT_MAX + 1, stdin) : 0;
    if (!buf || ferror(stdin) || n > PROMPT_MAX) {
        fprintf(stderr, "pacer generate: PROMPT from standard input: %s\n",
                !buf || ferror(stdin) ? "cannot read it" : "larger than 1 MiB");
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    if (strlen(buf) != n) {
        fprintf(stderr, "pacer generate: PROMPT from standard input holds a NUL byte\n");
        free(buf);
        return NULL;
    }
    return buf;
}

/* The request's JSON: the prompt and only the options given. NULL after printing why. */
static json_t *generate_request(const cli_args_t *a, const char *prompt)
{
    json_t *req = json_object();
    json_t *p = json_string(prompt); /* NULL for text that is not UTF-8 */
    if (!req || !p) {
        fprintf(stderr, "pacer generate: PROMPT is not valid UTF-8 text\n");
        json_decref(req);
        json_decref(p);
        return NULL;
    }
    json_object_set_new(req, "prompt", p);
    if (a->seen & OPT_MAX_TOKENS) json_object_set_new(req, "max_tokens", json_integer(a->max_tokens));
    if (a->seen & OPT_TEMPERATURE) json_object_set_new(req, "temperature", json_real(a->temperature));
    if (a->seen & OPT_TOP_K) json_object_set_new(req, "top_k", json_integer(a->top_k));
    if (a->seen & OPT_SEED) json_object_set_new(req, "seed", json_integer(a->seed));
    if (a->checkpoint) json_object_set_new(req, "checkpoint", json_string(a->checkpoint));
    if (a->precision) json_object_set_new(req, "precision", json_string(a->precision));
    return req;
}

/* The model's text on a terminal: a model writes any byte it learnt, an escape sequence
 * included, so control characters (C0 but line breaks and tabs, DEL, C1) become '?' as in
 * every other text from the coordinator (format.h's fmt_clean, which also folds lines). */
static void write_for_terminal(const char *text, FILE *out)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if (*p == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
            fputc('?', out);
            p++;
        } else if ((*p < 0x20 && *p != '\n' && *p != '\t') || *p == 0x7f) {
            fputc('?', out);
        } else {
            fputc(*p, out);
        }
    }
}

/* One piece of the model's text on stdout, as it comes. */
static void put_text(const char *text, int tty, char *last)
{
    size_t len = text ? strlen(text) : 0;
    if (!len) return;
    if (tty) write_for_terminal(text, stdout);
    else fwrite(text, 1, len, stdout);
    fflush(stdout);
    *last = text[len - 1];
}

/* After the text: its line end, then one line of counts on stderr. */
static void print_counts(const json_t *ans, char last)
{
    if (last && last != '\n') fputc('\n', stdout);
    fflush(stdout);
    json_int_t tokens = json_integer_value(json_object_get(ans, "tokens"));
    json_int_t prompt_tokens = json_integer_value(json_object_get(ans, "prompt_tokens"));
    json_t *r = json_object_get(ans, "tokens_per_s");
    char rate[32] = "- tokens/s (not measured)";
    if (json_is_number(r)) snprintf(rate, sizeof rate, "%.1f tokens/s", json_number_value(r));
    fprintf(stderr, "pacer generate: %lld tokens after a prompt of %lld, %s%s\n", (long long)tokens,
            (long long)prompt_tokens, rate,
            json_is_true(json_object_get(ans, "prompt_truncated"))
                ? " (the prompt was cut to the model's last block_size tokens)"
                : "");
}

/* What the event stream of one generation left. */
typedef struct {
    int tty;
    char last;      /* the last byte of text printed; 0 = none */
    json_t *done;   /* the "done" event's answer */
    json_t *failed; /* the "error" event's problem detail */
} gen_stream_t;

/* "token" {"text"}: printed at once; "done" {the answer} and "error" {a problem detail}
 * end the stream; other events are skipped (a newer coordinator may send more). */
static int on_event(void *ctx, const char *type, const char *id, const char *data)
{
    gen_stream_t *g = ctx;
    json_t *j = json_loads(data, 0, NULL);
    int stop = 0;
    if (!json_is_object(j)) {
        json_decref(j);
        return 0;
    }
    if (strcmp(type, "token") == 0) {
        put_text(json_string_value(json_object_get(j, "text")), g->tty, &g->last);
    } else if (strcmp(type, "done") == 0 && !g->done) {
        g->done = json_incref(j);
        stop = 1;
    } else if (strcmp(type, "error") == 0 && !g->failed) {
        g->failed = json_incref(j);
        stop = 1;
    }
    json_decref(j);
    return stop;
}

/* The "error" event: {"error": MESSAGE} (the generation process's words), or a problem
 * detail, reported like the API's other errors (exit 1). */
static int stream_failed(const cli_ctx_t *cx, json_t *failed, char last)
{
    if (last && last != '\n') fputc('\n', stdout);
    fflush(stdout);
    const char *msg = json_string_value(json_object_get(failed, "error"));
    if (msg) {
        char line[1024];
        fmt_clean(msg, 900, line, sizeof line);
        fprintf(stderr, "pacer generate: generation failed: %s\n", line);
        if (cx->args->json) fmt_json(stdout, failed);
        return CLI_EXIT_API;
    }
    client_resp_t r = {.status = (long)json_integer_value(json_object_get(failed, "status"))};
    r.body = json_dumps(failed, JSON_COMPACT);
    r.len = r.body ? strlen(r.body) : 0;
    int rc = cli_api_error(cx, &r);
    free(r.body);
    return rc;
}

/* A whole JSON answer (--json, or a coordinator that does not stream). */
static int whole_answer(const cli_ctx_t *cx, const client_resp_t *r, int tty)
{
    json_t *ans = r->body ? json_loadb(r->body, r->len, 0, NULL) : NULL;
    if (!json_is_object(ans)) {
        fprintf(stderr, "pacer generate: the coordinator at %s answered with something that is not a JSON object\n",
                client_url(cx->client));
        json_decref(ans);
        return CLI_EXIT_API;
    }
    char last = 0;
    if (cx->args->json) fmt_json(stdout, ans);
    else {
        put_text(json_string_value(json_object_get(ans, "text")), tty, &last);
        print_counts(ans, last);
    }
    json_decref(ans);
    return CLI_EXIT_OK;
}

/* POST the request: streamed for people, whole for --json. */
static int post_generate(cli_ctx_t *cx, const char *path, const char *body)
{
    client_resp_t r;
    char err[1024];
    gen_stream_t g = {.tty = isatty(STDOUT_FILENO)};
    sse_parser_t parser;
    sse_init(&parser, on_event, &g);
    int rc = cx->args->json ? client_call(cx->client, "POST", path, body, strlen(body), &r, err, sizeof err)
                            : client_post_stream(cx->client, path, body, strlen(body), &parser, &r, err, sizeof err);
    sse_free(&parser);
    if (g.done) {
        print_counts(g.done, g.last);
        rc = CLI_EXIT_OK;
    } else if (g.failed) {
        rc = stream_failed(cx, g.failed, g.last);
    } else if (rc != 0) {
        if (g.last && g.last != '\n') fputc('\n', stdout);
        rc = cli_unreachable(cx, err);
    } else if (r.status < 200 || r.status >= 300) {
        rc = cli_api_error(cx, &r);
    } else if (strncasecmp(r.content_type, "text/event-stream", 17) == 0) {
        if (g.last && g.last != '\n') fputc('\n', stdout);
        fprintf(stderr, "pacer generate: the event stream from %s ended before its answer (no \"done\" event)\n",
                client_url(cx->client));
        rc = CLI_EXIT_UNREACHABLE;
    } else {
        rc = whole_answer(cx, &r, g.tty);
    }
    json_decref(g.done);
    json_decref(g.failed);
    client_resp_free(&r);
    return rc;
}

int cmd_generate(cli_ctx_t *cx)
{
    const cli_args_t *a = cx->args;
    char path[512];
    if (client_job_path(path, sizeof path, a->arg, "/generate") != 0) {
        fprintf(stderr, "pacer generate: job id too long\n");
        return CLI_EXIT_USAGE;
    }
    char *prompt = read_prompt(a->arg2);
    json_t *req = prompt ? generate_request(a, prompt) : NULL;
    free(prompt);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) return CLI_EXIT_USAGE;
    int rc = post_generate(cx, path, body);
    free(body);
    return rc;
}
