/* cli/cliargs.h - the command line of `pacer`, the API's command-line client: the
 * command and option tables (the help text is printed from them), and the parser.
 *
 * Options may come before or after the command; "--name=value" and "--name value" both
 * work, as do the short forms; "--" ends the options. Global options (--url, --token,
 * --token-file, --json, --help) apply to every command; the others only to the commands
 * that list them. The coordinator's address and token come from the options, else from
 * PACER_URL and PACER_TOKEN, else the default URL. Pure: no I/O except the help text.
 */
#ifndef PACER_CLI_CLIARGS_H
#define PACER_CLI_CLIARGS_H

#include <stddef.h>
#include <stdio.h>

#define CLI_DEFAULT_URL "http://127.0.0.1:8080"
#define CLI_URL_MAX 1024
#define CLI_TOKEN_MAX 4096

/* Exit statuses (docs/CLI.md). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_API = 1,         /* the API answered with an error (its problem detail is printed) */
    CLI_EXIT_USAGE = 2,       /* bad command line, unreadable file */
    CLI_EXIT_UNREACHABLE = 3, /* no answer from the coordinator (the URL is named) */
    CLI_EXIT_FAILED = 4,      /* watch, logs -f, --watch: the job ended FAILED */
    CLI_EXIT_CANCELLED = 5,   /* ... ended CANCELLED */
};

typedef enum {
    CMD_SUBMIT,
    CMD_LS,
    CMD_GET,
    CMD_WATCH,
    CMD_LOGS,
    CMD_CANCEL,
    CMD_RETRY,
    CMD_TRACE,
    CMD_EXPORT,
    CMD_MODELS,
    CMD_DATASETS,
    CMD_CLUSTER_JSON,
    CMD_UPLOAD,
    CMD_RM_MODEL,
    CMD_USER,
    CMD_TOKEN,
    CMD_WHOAMI,
    CMD_EXPERIMENT,
    CMD_HOST,
    CMD_TOKENIZE,
    CMD_GENERATE,
    CMD_HELP,
} cli_cmd_t;

/* Option bits. */
enum {
    OPT_URL = 1u << 0,
    OPT_TOKEN = 1u << 1,
    OPT_TOKEN_FILE = 1u << 2,
    OPT_JSON = 1u << 3,
    OPT_HELP = 1u << 4,
    OPT_VERSION = 1u << 5,
    OPT_WATCH = 1u << 6,
    OPT_STATE = 1u << 7,
    OPT_LIMIT = 1u << 8,
    OPT_FOLLOW = 1u << 9,
    OPT_TAIL = 1u << 10,
    OPT_OUTPUT = 1u << 11,
    OPT_CACERT = 1u << 12,
    OPT_ALLOW_INSECURE_TOKEN = 1u << 13,
    OPT_ROLE = 1u << 14,
    OPT_EXPIRES = 1u << 15,
    OPT_WEIGHT = 1u << 16,
    OPT_EVERY = 1u << 17,
    OPT_TOKENIZER = 1u << 18,
    OPT_DEADLINE = 1u << 19,
    OPT_REASON = 1u << 20,
    OPT_MAX_TOKENS = 1u << 21,
    OPT_TEMPERATURE = 1u << 22,
    OPT_TOP_K = 1u << 23,
    OPT_SEED = 1u << 24,
    OPT_CHECKPOINT = 1u << 25,
    OPT_PRECISION = 1u << 26,
    OPT_FORMAT = 1u << 27,
    OPT_NAMES = 1u << 28,
    OPT_DTYPE = 1u << 29,
};
#define OPT_GLOBAL \
    (OPT_URL | OPT_TOKEN | OPT_TOKEN_FILE | OPT_JSON | OPT_HELP | OPT_VERSION | OPT_CACERT | OPT_ALLOW_INSECURE_TOKEN)

typedef struct {
    const char *name;
    cli_cmd_t cmd;
    int min_args, max_args;
    const char *args;    /* "SPEC" */
    unsigned opts;       /* the options it takes besides the global ones */
    const char *summary; /* one line for `pacer --help` */
    const char *help;    /* the paragraph of `pacer CMD --help` */
} cli_command_t;

typedef struct {
    const char *long_name;
    char short_name; /* 0 = none */
    const char *arg; /* NULL = a flag */
    unsigned bit;
    const char *help;
} cli_option_t;

typedef struct {
    const cli_command_t *command; /* NULL: no command given (usage, or --version) */
    const char *arg;              /* the command's argument (SPEC, ID, or the command help asks about) */
    const char *arg2;             /* its second (upload's FILE); NULL when none */
    const char *url;              /* never NULL after a successful parse */
    const char *token;            /* NULL = none */
    const char *token_file;
    const char *cacert;       /* --cacert (pacer.c falls back to $PACER_CACERT); NULL = the system's CAs */
    int allow_insecure_token; /* --allow-insecure-token (or $PACER_ALLOW_INSECURE_TOKEN=1, pacer.c) */
    const char *state;        /* ls --state */
    const char *output;       /* trace -o */
    long limit;               /* ls --limit (default 50) */
    long tail;                /* logs --tail (0 = the whole log) */
    const char *role;         /* user add --role */
    long expires;             /* user add --expires SECONDS (0 = never) */
    const char *weight;       /* user weight --weight W (the server checks the range) */
    const char *tokenizer;    /* tokenize --tokenizer bytes|chars|bpe:VOCAB,MERGES|bpe:FILE */
    long deadline;            /* host drain --deadline SECONDS (0 = the server's default) */
    const char *reason;       /* host drain --reason TEXT */
    long every;               /* watch --every SECONDS: step lines in a pipe (0 = a line per epoch only) */
    /* generate: sent only when given (the seen bits), so the server's defaults and bounds
     * apply; here only their form is checked (whole numbers, a number for temperature) */
    long max_tokens, top_k, seed;
    double temperature;
    const char *checkpoint; /* generate --checkpoint latest|best|NAME */
    const char *precision;  /* generate --precision fp32|bf16 */
    /* export --format onnx|safetensors, --names nanogpt|hf, --dtype f32|bf16 (NULL: not given) */
    const char *format, *names, *dtype;
    int json, help, version, watch, follow;
    unsigned seen; /* option bits given */
} cli_args_t;

/* Parses argv (argv[0] is the program). env_url/env_token: $PACER_URL and $PACER_TOKEN
 * (NULL or "" = unset). Returns 0, or -1 with one line in err ("ls: --follow does not
 * apply to ls"). A parse that sets help or version needs no command. */
int cli_args_parse(int argc, char *const argv[], const char *env_url, const char *env_token, cli_args_t *a, char *err,
                   size_t errlen);

/* 0 when url is an http:// or https:// URL without spaces or control characters. */
int cli_url_valid(const char *url, char *err, size_t errlen);

/* The clear-text token rule: a token goes over plain http:// only to a loopback host
 * (localhost, 127.0.0.0/8, ::1), unless allowed. 0 when url may carry token (none, an
 * https:// URL, a loopback host, or allowed), else -1 with err naming the rule and the
 * ways out. Pure: decided from the URL's text, before any connection. */
int cli_token_transport_ok(const char *url, const char *token, int allowed, char *err, size_t errlen);

const cli_command_t *cli_command_find(const char *name);
const cli_command_t *cli_commands(size_t *n);

/* `pacer --help` and `pacer CMD --help`. */
void cli_usage(FILE *f);
void cli_command_help(FILE *f, const cli_command_t *c);

#endif
