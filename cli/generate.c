/* cli/generate.c - `pacer generate ID PROMPT`: a thin caller of POST
 * /api/v1/jobs/{id}/generate. The coordinator owns every rule (bounds, defaults, who may
 * generate); the CLI only builds the request from the options given and prints the
 * answer: the text on stdout, the counts on stderr, so that `pacer generate ... > out.txt`
 * keeps the model's text alone. */
#include "commands.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

/* The answer for people: the text (as it is into a pipe or file), then one line of
 * counts on stderr. */
static void print_answer(const json_t *ans)
{
    const char *text = json_string_value(json_object_get(ans, "text"));
    size_t len = text ? strlen(text) : 0;
    if (len && isatty(STDOUT_FILENO)) write_for_terminal(text, stdout);
    else if (len) fwrite(text, 1, len, stdout);
    if (len && text[len - 1] != '\n') fputc('\n', stdout);
    fflush(stdout);
    json_int_t tokens = json_integer_value(json_object_get(ans, "tokens"));
    json_int_t prompt_tokens = json_integer_value(json_object_get(ans, "prompt_tokens"));
    double rate = json_number_value(json_object_get(ans, "tokens_per_s"));
    fprintf(stderr, "pacer generate: %lld tokens after a prompt of %lld, %.1f tokens/s%s\n", (long long)tokens,
            (long long)prompt_tokens, rate,
            json_is_true(json_object_get(ans, "prompt_truncated"))
                ? " (the prompt was cut to the model's last block_size tokens)"
                : "");
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

    client_resp_t r;
    char err[1024];
    int rc = client_call(cx->client, "POST", path, body, strlen(body), &r, err, sizeof err);
    free(body);
    if (rc != 0) return cli_unreachable(cx, err);
    if (r.status < 200 || r.status >= 300) {
        rc = cli_api_error(cx, &r);
        client_resp_free(&r);
        return rc;
    }
    json_t *ans = r.body ? json_loadb(r.body, r.len, 0, NULL) : NULL;
    client_resp_free(&r);
    if (!json_is_object(ans)) {
        fprintf(stderr, "pacer generate: the coordinator at %s answered with something that is not a JSON object\n",
                client_url(cx->client));
        json_decref(ans);
        return CLI_EXIT_API;
    }
    if (a->json) fmt_json(stdout, ans);
    else print_answer(ans);
    json_decref(ans);
    return CLI_EXIT_OK;
}
