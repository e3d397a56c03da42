/* cli/calls.h - how a command of `pacer` calls the coordinator's API and says what went
 * wrong: an API error as its problem detail, a coordinator out of reach with a hint, an
 * answer that is not JSON. Every command's file uses it (commands.c, watch.c,
 * experiment.c, generate.c); it uses none of them. */
#ifndef PACER_CLI_CALLS_H
#define PACER_CLI_CALLS_H

#include <jansson.h>

#include "client.h"
#include "cliargs.h"

/* A command's context: its client and its parsed arguments. */
typedef struct {
    client_t *client;
    const cli_args_t *args;
} cli_ctx_t;

/* The command's name as the user typed it ("pacer" before one is known). */
const char *cli_cmd_name(const cli_ctx_t *cx);

/* Prints "pacer CMD: <the problem detail>" on stderr (and with --json the problem
 * document on stdout); returns CLI_EXIT_API. */
int cli_api_error(const cli_ctx_t *cx, const client_resp_t *r);
/* Prints "pacer CMD: <err>" (err names the URL); returns CLI_EXIT_UNREACHABLE. */
int cli_unreachable(const cli_ctx_t *cx, const char *err);

/* One call whose 2xx answer is JSON: CLI_EXIT_OK with *out, or the exit status of the
 * failure (reported). *r is the caller's to free (client_resp_free) either way. */
int cli_call_json(cli_ctx_t *cx, const char *method, const char *path, const char *body, size_t len, client_resp_t *r,
                  json_t **out);
/* GET path and parse the JSON answer: CLI_EXIT_OK with *out, or the exit status of the
 * failure (reported). */
int cli_get_json(cli_ctx_t *cx, const char *path, json_t **out);

#endif
