/* cli/pacer.c - `pacer`, the command-line client of pacer-coordinator's REST API
 * (docs/CLI.md): parses the command line (cliargs.h), sets up libcurl and runs one
 * command (commands.h). Exit statuses are CLI_EXIT_* (cliargs.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "commands.h"
#include "version.h"

/* The first line of a token file, without its line end. */
static int read_token(const char *path, char *out, size_t len)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "pacer: --token-file %s: %s\n", path, strerror(errno));
        return -1;
    }
    int ok = fgets(out, (int)len, f) != NULL;
    fclose(f);
    out[strcspn(out, "\r\n")] = 0;
    if (!ok || !*out) {
        fprintf(stderr, "pacer: --token-file %s: no token in its first line\n", path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    cli_args_t a;
    char err[512];
    if (cli_args_parse(argc, argv, getenv("PACER_URL"), getenv("PACER_TOKEN"), &a, err, sizeof err) != 0) {
        fprintf(stderr, "pacer: %s\n", err);
        return CLI_EXIT_USAGE;
    }
    if (a.version) {
        printf("pacer %s\n", PACER_VERSION);
        return CLI_EXIT_OK;
    }
    if (!a.command || (a.command->cmd == CMD_HELP && !a.arg)) {
        cli_usage(a.command || a.help ? stdout : stderr);
        return a.command || a.help ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    if (a.command->cmd == CMD_HELP || a.help) {
        cli_command_help(stdout, a.command->cmd == CMD_HELP ? cli_command_find(a.arg) : a.command);
        return CLI_EXIT_OK;
    }
    if (a.command->cmd == CMD_TOKENIZE) return cmd_tokenize(&a); /* local: no coordinator */
    static char token[CLI_TOKEN_MAX];
    if (a.token_file) {
        if (read_token(a.token_file, token, sizeof token) != 0) return CLI_EXIT_USAGE;
        a.token = token;
    }
    /* The token rule before any connection (cliargs.h): not in clear to another host. */
    const char *allow_env = getenv("PACER_ALLOW_INSECURE_TOKEN");
    if (allow_env && strcmp(allow_env, "1") == 0) a.allow_insecure_token = 1;
    if (cli_token_transport_ok(a.url, a.token, a.allow_insecure_token, err, sizeof err) != 0) {
        fprintf(stderr, "pacer: %s\n", err);
        memset(token, 0, sizeof token);
        return CLI_EXIT_USAGE;
    }
    if (!a.cacert && getenv("PACER_CACERT") && *getenv("PACER_CACERT")) a.cacert = getenv("PACER_CACERT");

    /* A write to a connection the server closed must be an error return, not death. */
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        fprintf(stderr, "pacer: cannot initialise libcurl\n");
        return CLI_EXIT_UNREACHABLE;
    }
    client_t *client = client_new(a.url, a.token, err, sizeof err);
    if (!client) {
        fprintf(stderr, "pacer: %s\n", err);
        curl_global_cleanup();
        return CLI_EXIT_USAGE;
    }
    if (a.cacert && client_set_cacert(client, a.cacert, err, sizeof err) != 0) {
        fprintf(stderr, "pacer: %s\n", err);
        client_free(client);
        curl_global_cleanup();
        memset(token, 0, sizeof token);
        return CLI_EXIT_USAGE;
    }
    cli_ctx_t cx = {.client = client, .args = &a};
    int rc = CLI_EXIT_USAGE;
    switch (a.command->cmd) {
    case CMD_SUBMIT: rc = cmd_submit(&cx); break;
    case CMD_LS: rc = cmd_ls(&cx); break;
    case CMD_GET: rc = cmd_get(&cx); break;
    case CMD_WATCH: rc = cmd_watch(&cx); break;
    case CMD_LOGS: rc = cmd_logs(&cx); break;
    case CMD_CANCEL: rc = cmd_cancel(&cx); break;
    case CMD_RETRY: rc = cmd_retry(&cx); break;
    case CMD_USER: rc = cmd_user(&cx); break;
    case CMD_TOKEN: rc = cmd_token(&cx); break;
    case CMD_WHOAMI: rc = cmd_whoami(&cx); break;
    case CMD_EXPERIMENT: rc = cmd_experiment(&cx); break;
    case CMD_HOST: rc = cmd_host(&cx); break;
    case CMD_GENERATE: rc = cmd_generate(&cx); break;
    case CMD_TRACE: rc = cmd_trace(&cx); break;
    case CMD_EXPORT: rc = cmd_export(&cx); break;
    case CMD_MODELS: rc = cmd_models(&cx); break;
    case CMD_DATASETS: rc = cmd_datasets(&cx); break;
    case CMD_CLUSTER_JSON: rc = cmd_cluster_json(&cx); break;
    case CMD_UPLOAD: rc = cmd_upload(&cx); break;
    case CMD_RM_MODEL: rc = cmd_rm_model(&cx); break;
    case CMD_TOKENIZE:
    case CMD_HELP: break;
    }
    client_free(client);
    curl_global_cleanup();
    memset(token, 0, sizeof token);
    return rc;
}
