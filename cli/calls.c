/* cli/calls.c - see calls.h. */
#include "calls.h"

#include <stdio.h>
#include <string.h>

#include "format.h"

const char *cli_cmd_name(const cli_ctx_t *cx) { return cx->args->command ? cx->args->command->name : "pacer"; }

int cli_api_error(const cli_ctx_t *cx, const client_resp_t *r)
{
    char msg[1200];
    fmt_problem(r->status, r->body, r->len, msg, sizeof msg);
    fprintf(stderr, "pacer %s: %s\n", cli_cmd_name(cx), msg);
    if (cx->args->json && r->body) {
        json_t *p = json_loadb(r->body, r->len, 0, NULL);
        if (json_is_object(p)) fmt_json(stdout, p);
        json_decref(p);
    }
    return CLI_EXIT_API;
}

int cli_unreachable(const cli_ctx_t *cx, const char *err)
{
    fprintf(stderr, "pacer %s: %s%s\n", cli_cmd_name(cx), err,
            strncmp(err, "cannot reach", 12) == 0 ? " (is pacer-coordinator running there? --url or PACER_URL sets "
                                                    "the address)"
                                                  : "");
    return CLI_EXIT_UNREACHABLE;
}

/* The answer's body as JSON, or NULL (reported as an error of the API). */
static json_t *body_json(const cli_ctx_t *cx, const client_resp_t *r)
{
    json_error_t e;
    json_t *j = r->body ? json_loadb(r->body, r->len, 0, &e) : NULL;
    if (!j)
        fprintf(stderr, "pacer %s: the coordinator at %s answered HTTP %ld with something that is not JSON\n",
                cli_cmd_name(cx), client_url(cx->client), r->status);
    return j;
}

int cli_call_json(cli_ctx_t *cx, const char *method, const char *path, const char *body, size_t len, client_resp_t *r,
                  json_t **out)
{
    char err[1024];
    *out = NULL;
    if (client_call(cx->client, method, path, body, len, r, err, sizeof err) != 0) return cli_unreachable(cx, err);
    int rc = CLI_EXIT_OK;
    if (r->status < 200 || r->status >= 300) rc = cli_api_error(cx, r);
    else if (!(*out = body_json(cx, r))) rc = CLI_EXIT_API;
    return rc;
}

int cli_get_json(cli_ctx_t *cx, const char *path, json_t **out)
{
    client_resp_t r;
    int rc = cli_call_json(cx, "GET", path, NULL, 0, &r, out);
    client_resp_free(&r);
    return rc;
}
