/* cli/commands.h - the commands of `pacer`, one function each (commands.c, watch.c,
 * experiment.c, generate.c, tokenize.c); how they call the API is calls.h's. */
#ifndef PACER_CLI_COMMANDS_H
#define PACER_CLI_COMMANDS_H

#include "calls.h"

int cmd_submit(cli_ctx_t *cx);
int cmd_ls(cli_ctx_t *cx);
int cmd_get(cli_ctx_t *cx);
int cmd_watch(cli_ctx_t *cx);
int cmd_logs(cli_ctx_t *cx);
int cmd_cancel(cli_ctx_t *cx);
int cmd_retry(cli_ctx_t *cx);
int cmd_trace(cli_ctx_t *cx);
int cmd_export(cli_ctx_t *cx);
int cmd_models(cli_ctx_t *cx);
int cmd_datasets(cli_ctx_t *cx);
/* GET /api/v1/cluster/classes: pacer-sched-sim's cluster file into -o FILE (default stdout). */
int cmd_cluster_json(cli_ctx_t *cx);
int cmd_upload(cli_ctx_t *cx);
int cmd_rm_model(cli_ctx_t *cx);
int cmd_user(cli_ctx_t *cx);   /* user add|ls|rm */
int cmd_token(cli_ctx_t *cx);  /* token new */
int cmd_whoami(cli_ctx_t *cx); /* who the token is */
/* experiment submit FILE | ls | get ID | cancel ID (experiment.c) */
int cmd_experiment(cli_ctx_t *cx);
int cmd_host(cli_ctx_t *cx); /* host drain|undrain NAME */
/* generate ID PROMPT (generate.c): POST /api/v1/jobs/ID/generate, the text on stdout. */
int cmd_generate(cli_ctx_t *cx);

/* tokenize DIR --tokenizer bytes|chars|bpe:... (tokenize.c): local, no coordinator. */
int cmd_tokenize(const cli_args_t *a);

/* Follows job id until it ends (watch.c); the exit status of its final state, or of the
 * error that stopped it. */
int cli_watch(cli_ctx_t *cx, const char *id);

#endif
