/* cli/cliargs.c - see cliargs.h. */
#include "cliargs.h"
#include "numarg.h"
#include "suggest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const cli_command_t COMMANDS[] = {
    {"submit", CMD_SUBMIT, 1, 1, "SPEC", OPT_WATCH | OPT_EVERY,
     "queue a job from a spec file (- = stdin); prints its id",
     "Sends the job spec (docs/JOB_SPEC.md; a file, or - for standard input) to POST /api/v1/jobs\n"
     "and prints the new job's id (--json: the job). With --watch it then follows the job as\n"
     "`pacer watch` does and exits with its final state. An invalid spec is refused with the\n"
     "field that is wrong."},
    {"ls", CMD_LS, 0, 0, "", OPT_STATE | OPT_LIMIT, "list jobs, newest first (--state, --limit)",
     "A table of jobs, newest first: id, state, name, model, algorithm, workers, age, run\n"
     "time, restarts and reason. --state keeps the jobs in one state (QUEUED, RUNNING,\n"
     "RESTARTING, SUCCEEDED, FAILED, CANCELLED; any case); --limit the first N (default 50,\n"
     "the API caps at 1000). --json prints the API's page as it is."},
    {"get", CMD_GET, 1, 1, "ID", 0, "one job in detail",
     "The job: state and reason, spec summary, times, restarts, the job it retries and its\n"
     "retries, the result once the worker wrote its summary. --json prints the API's job\n"
     "object, spec included."},
    {"watch", CMD_WATCH, 1, 1, "ID", OPT_EVERY, "follow a job live, one line per rank",
     "Follows the job's event stream (GET /api/v1/jobs/ID/events, Server-Sent Events): one\n"
     "line per rank with epoch, step, batch, loss, samples/s, staleness and test accuracy,\n"
     "redrawn in place on a terminal. Otherwise (a pipe, a file) it prints a line per rank\n"
     "at each epoch's end (and evaluation), and with --every SECONDS also the rank's latest\n"
     "step, at most once per SECONDS (--json: every event, one per line, as the API sends\n"
     "it). A dropped stream is resumed where it stopped. Ends when the job ends, with its\n"
     "final state as the exit status (0 SUCCEEDED, 4 FAILED, 5 CANCELLED)."},
    {"logs", CMD_LOGS, 1, 1, "ID", OPT_FOLLOW | OPT_TAIL, "the job's log (-f follows it, --tail N)",
     "Prints the job's log (mpirun and every rank, every attempt), which the coordinator\n"
     "keeps after the job's processes are gone. --tail N prints only the last N lines; -f\n"
     "keeps printing what is appended until the job ends, then exits with its final state\n"
     "like watch. --json prints the API's pages, one per line."},
    {"cancel", CMD_CANCEL, 1, 1, "ID", 0, "cancel a queued or running job",
     "A queued job is cancelled at once; a running one is stopped within a few seconds (the\n"
     "command returns once it is asked: follow it with watch). A finished job cannot be\n"
     "cancelled (the API answers 409)."},
    {"retry", CMD_RETRY, 1, 1, "ID", OPT_WATCH | OPT_EVERY, "run a finished job again with the same spec",
     "Queues a new job with the spec of a SUCCEEDED, FAILED or CANCELLED job (POST\n"
     "/api/v1/jobs/ID/retry) and prints its id; the new job records ID as its parent. A\n"
     "job that has not finished is refused (409: cancel it first). --watch follows the new\n"
     "job like submit --watch."},
    {"trace", CMD_TRACE, 1, 1, "ID", OPT_OUTPUT, "save the job's timeline (Chrome trace JSON)",
     "Downloads GET /api/v1/jobs/ID/trace, the job's recent steps as Chrome trace event JSON\n"
     "(open it in Perfetto or chrome://tracing), into FILE (-o; default ID.trace.json; - =\n"
     "standard output). The file is written only when the whole answer has arrived."},
    {"export", CMD_EXPORT, 1, 1, "ID", OPT_OUTPUT | OPT_FORMAT | OPT_NAMES | OPT_DTYPE,
     "save the job's trained model as ONNX or safetensors",
     "Downloads GET /api/v1/jobs/ID/model.onnx, the job's latest weights (its worker writes\n"
     "them with every checkpoint and at the end) as an ONNX file: a built-in network's graph,\n"
     "or the uploaded graph in inference form, the tensors under PyTorch's state_dict names.\n"
     "--format safetensors downloads GET /api/v1/jobs/ID/model.safetensors instead, the same\n"
     "weights as safetensors; with --names hf the built-in GPT under Hugging Face GPT-2's\n"
     "names and Conv1D layout, with --dtype bf16 in BF16. Into FILE (-o; default ID.onnx or\n"
     "ID.safetensors; - = standard output), written only when the whole answer has arrived.\n"
     "A job with no model yet is the API's 404."},
    {"models", CMD_MODELS, 0, 1, "[NAME]", 0, "the models a spec may name (the catalog)",
     "A table of the coordinator's catalog of models (GET /api/v1/models): name, source\n"
     "(builtin; uploaded for one `pacer upload` stored; onnx for an imported one), input shape, classes, parameters, forward\n"
     "FLOPs per sample, the memory a rank needs for the model and for each sample of its\n"
     "largest batch, and the data set it trains on by default. With NAME, that model alone\n"
     "(GET /api/v1/models/NAME; an unknown name is the API's 404). --json prints the API's\n"
     "answer."},
    {"datasets", CMD_DATASETS, 0, 0, "", 0, "the data sets a spec may name, and which are here",
     "A table of the catalog's data sets (GET /api/v1/datasets): name, format, image shape,\n"
     "classes, training and test samples, and where the coordinator's machine has the\n"
     "files (its default directory, or under a data root; - when absent). --json prints\n"
     "the API's answer."},
    {"cluster-json", CMD_CLUSTER_JSON, 0, 0, "", OPT_OUTPUT, "the scheduler simulator's cluster file, from the profiles",
     "Writes pacer-sched-sim's CLUSTER.json (docs/ARCHITECTURE.md \"Scheduler simulator\") from\n"
     "GET /api/v1/cluster/classes: the coordinator's hosts grouped into classes by their\n"
     "measured speed, as --policy hetero groups them, and each profiled model's samples/s per\n"
     "slot on each class. Into FILE (-o; default - = standard output), written only whole;\n"
     "the hosts of each class and any model the simulator cannot take are printed on\n"
     "standard error. --json prints the API's answer."},
    {"upload", CMD_UPLOAD, 2, 2, "NAME FILE", 0, "upload an ONNX model as NAME for job specs to train",
     "Sends the ONNX file (what torch.onnx.export writes) to PUT /api/v1/models/NAME. The\n"
     "coordinator checks that pacer can train it and stores it; a job spec then names it as\n"
     "\"model\": {\"onnx\": \"NAME\"}. Prints its summary: sha256, input shape, classes, layers,\n"
     "parameters, FLOPs per sample (--json: the API's answer). An upload of an existing NAME\n"
     "replaces it. A file pacer cannot train is refused with the importer's message, naming\n"
     "the node and its operator (exit status 1), as is a file that is not ONNX, one larger\n"
     "than the coordinator's --max-model-bytes, or a built-in model's NAME."},
    {"rm-model", CMD_RM_MODEL, 1, 1, "NAME", 0, "delete an uploaded model",
     "DELETE /api/v1/models/NAME: the upload leaves the catalog (and the coordinator's\n"
     "store). Built-in models cannot be deleted, nor an upload a queued or running job\n"
     "uses (the API answers 409)."},
    {"user", CMD_USER, 1, 2, "add|ls|rm|weight [NAME]", OPT_ROLE | OPT_EXPIRES | OPT_WEIGHT,
     "manage users (admins): add NAME --role ROLE [--expires S], ls, rm NAME, weight NAME --weight W",
     "user add NAME --role admin|member|viewer [--expires SECONDS] creates a user and prints its\n"
     "token, once: only a salted hash of it is kept, so keep it (give it to the user, who sets\n"
     "PACER_TOKEN or --token-file). user ls lists the users and their roles; user rm NAME\n"
     "removes one, whose token stops working at once; user weight NAME --weight W sets their\n"
     "fair-share weight under the coordinator's --policy fair (W in (0, 1000]; default 1).\n"
     "Admins only (403 otherwise)."},
    {"token", CMD_TOKEN, 1, 1, "new", 0, "a new token for yourself; the old one stops working",
     "token new replaces the caller's token with a new one and prints it, once; the old one is\n"
     "refused from then on, and the expiry stays. Any role; not the daemon's own token."},
    {"tokenize", CMD_TOKENIZE, 1, 1, "DIR", OPT_TOKENIZER, "text into llm.c token shards, on this machine",
     "Reads DIR/train.txt and DIR/val.txt and writes DIR/train.bin and DIR/val.bin, llm.c's\n"
     "shards (a 1024-byte header, magic 20240520, then uint16 ids) that a data set of format\n"
     "\"tokens\" reads, and the tokenizer beside them (DIR/tokens.tokenizer). --tokenizer (required):\n"
     "bytes (each byte a token), chars (each distinct UTF-8 character of both files, in code point\n"
     "order), bpe:VOCAB,MERGES (GPT-2's vocab.json and merges.txt) or bpe:FILE (a Hugging Face\n"
     "tokenizer.json of the BPE kind). Needs no coordinator; a progress bar on a terminal."},
    {"whoami", CMD_WHOAMI, 0, 0, "", 0, "who your token is: name, role, how you are authenticated, expiry",
     "GET /api/v1/whoami: the name and role the coordinator gives the token you send (--token,\n"
     "--token-file or PACER_TOKEN), how it knew (auth: user-token, daemon-token, anonymous\n"
     "under --public-reads, none on a coordinator without a token, where everyone local is the\n"
     "admin) and when the token expires. A token the coordinator does not know is its 401.\n"
     "--json prints the API's answer."},
    {"experiment", CMD_EXPERIMENT, 1, 2, "submit FILE | ls | get ID | cancel ID", OPT_LIMIT,
     "hyperparameter searches: submit one, list them, show one's trials, cancel one",
     "experiment submit FILE sends an experiment ({\"name\", \"spec\": a job spec, \"search\": {...}};\n"
     "docs/EXPERIMENTS.md; - = stdin) to POST /api/v1/experiments and prints its id and\n"
     "state. experiment ls lists experiments, newest first (--limit N); experiment get ID shows\n"
     "one: its best trial, and per trial its job, state, the rungs it reached, epochs trained,\n"
     "last metric and parameters; experiment cancel ID stops every trial (a member: only their\n"
     "own experiments). --json prints the API's answer."},
    {"host", CMD_HOST, 2, 2, "drain|undrain NAME", OPT_DEADLINE | OPT_REASON,
     "drain a host (no new ranks; its jobs move away with notice) or end its drain (admins)",
     "host drain NAME [--deadline S] [--reason TEXT] asks POST /api/v1/cluster/hosts/NAME/drain:\n"
     "no new ranks go to NAME, and each running job with ranks there checkpoints at its next\n"
     "step and resumes on the other hosts (an interruption with reason drain; no restart used).\n"
     "--deadline is the seconds its jobs have (default 300), --reason is shown with the drain.\n"
     "host undrain NAME ends it (DELETE of the same path). Admins only (403 otherwise); an\n"
     "unknown host is the API's 404."},
    {"generate", CMD_GENERATE, 2, 2, "ID PROMPT",
     OPT_MAX_TOKENS | OPT_TEMPERATURE | OPT_TOP_K | OPT_SEED | OPT_CHECKPOINT | OPT_PRECISION,
     "text from a language model job's weights, continuing PROMPT",
     "Asks POST /api/v1/jobs/ID/generate to continue PROMPT (- = standard input) with the job's\n"
     "trained GPT: a finished job's weights, a running one's newest checkpoint (--checkpoint\n"
     "latest|best|NAME picks one). Prints the model's text on standard output as it comes and,\n"
     "on standard error, how many tokens, at what rate, and whether the prompt was cut to the\n"
     "model's last block_size tokens. --max-tokens N, --temperature T (0 = greedy),\n"
     "--top-k K, --seed S and --precision fp32|bf16 are sent only when given (the\n"
     "coordinator's defaults and bounds apply, the job's own precision; a value out of bounds\n"
     "is its 400, naming the field). The same seed gives the same text. --json prints the\n"
     "API's answer."},
    {"help", CMD_HELP, 0, 1, "[COMMAND]", 0, "this text, or the help of one command",
     "pacer help COMMAND is pacer COMMAND --help."},
};
#define NCOMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static const cli_option_t OPTIONS[] = {
    {"url", 0, "URL", OPT_URL, "the coordinator (default $PACER_URL, else " CLI_DEFAULT_URL ")"},
    {"token", 0, "TOKEN", OPT_TOKEN, "API bearer token (default $PACER_TOKEN)"},
    {"token-file", 0, "FILE", OPT_TOKEN_FILE, "read the token from FILE (its first line)"},
    {"cacert", 0, "FILE", OPT_CACERT,
     "https: verify the coordinator's certificate against the CA(s) in this PEM file "
     "(default $PACER_CACERT, else the system's)"},
    {"allow-insecure-token", 0, NULL, OPT_ALLOW_INSECURE_TOKEN,
     "send the token over plain http:// to a host that is not loopback (readable on the way; "
     "or PACER_ALLOW_INSECURE_TOKEN=1)"},
    {"json", 0, NULL, OPT_JSON, "print JSON for scripts instead of tables"},
    {"watch", 'w', NULL, OPT_WATCH, "submit, retry: then follow the job like watch"},
    {"every", 0, "SECONDS", OPT_EVERY,
     "watch, --watch, not on a terminal: also each rank's latest step, at most once per SECONDS "
     "(default: a line per epoch only)"},
    {"state", 0, "STATE", OPT_STATE, "ls: only jobs in STATE"},
    {"limit", 0, "N", OPT_LIMIT, "ls: at most N jobs (default 50)"},
    {"follow", 'f', NULL, OPT_FOLLOW, "logs: keep printing until the job ends"},
    {"tail", 'n', "N", OPT_TAIL, "logs: only the last N lines"},
    {"output", 'o', "FILE", OPT_OUTPUT,
     "trace, export, cluster-json: where to write (default ID.trace.json, ID.onnx; - = stdout)"},
    {"format", 0, "F", OPT_FORMAT, "export: onnx (default) or safetensors"},
    {"names", 0, "N", OPT_NAMES,
     "export --format safetensors: nanogpt (default: the model's own) or hf (Hugging Face GPT-2's)"},
    {"dtype", 0, "D", OPT_DTYPE, "export --format safetensors: f32 (default) or bf16"},
    {"role", 0, "ROLE", OPT_ROLE, "user add: admin, member or viewer"},
    {"expires", 0, "SECONDS", OPT_EXPIRES, "user add: the token expires SECONDS from now (default never)"},
    {"weight", 0, "W", OPT_WEIGHT, "user weight: the user's fair-share weight, a number in (0, 1000]"},
    {"tokenizer", 0, "KIND", OPT_TOKENIZER,
     "tokenize: bytes, chars, or GPT-2's byte-level BPE from its vocab.json and merges.txt (bpe:VOCAB,MERGES; "
     "bpe:TOKENIZER_JSON, Hugging Face's)"},
    {"deadline", 0, "SECONDS", OPT_DEADLINE, "host drain: the seconds the host's jobs have (default 300)"},
    {"reason", 0, "TEXT", OPT_REASON, "host drain: why, shown with the drain"},
    {"max-tokens", 0, "N", OPT_MAX_TOKENS, "generate: at most N new tokens (the coordinator bounds N)"},
    {"temperature", 0, "T", OPT_TEMPERATURE, "generate: sampling temperature, T >= 0 (0 = greedy)"},
    {"top-k", 0, "K", OPT_TOP_K, "generate: sample among the K likeliest tokens only"},
    {"seed", 0, "S", OPT_SEED, "generate: the sampler's seed (the same seed, the same text)"},
    {"checkpoint", 0, "NAME", OPT_CHECKPOINT, "generate: latest (default), best, or a checkpoint's name"},
    {"precision", 0, "P", OPT_PRECISION, "generate: fp32 or bf16 matrix products (default: the job's precision)"},
    {"help", 'h', NULL, OPT_HELP, "help (of the command, after one)"},
    {"version", 0, NULL, OPT_VERSION, "print the version"},
};
#define NOPTIONS (sizeof OPTIONS / sizeof OPTIONS[0])

const cli_command_t *cli_commands(size_t *n)
{
    *n = NCOMMANDS;
    return COMMANDS;
}

const cli_command_t *cli_command_find(const char *name)
{
    for (size_t i = 0; name && i < NCOMMANDS; i++)
        if (strcmp(COMMANDS[i].name, name) == 0) return &COMMANDS[i];
    return NULL;
}

int cli_url_valid(const char *url, char *err, size_t errlen)
{
    size_t n = url ? strlen(url) : 0;
    const char *host = NULL;
    if (n > 0 && strncmp(url, "http://", 7) == 0) host = url + 7;
    else if (n > 0 && strncmp(url, "https://", 8) == 0) host = url + 8;
    if (!host || !*host || *host == '/') {
        snprintf(err, errlen, "URL '%.200s' must be http://HOST[:PORT] or https://...", url ? url : "");
        return -1;
    }
    if (n >= CLI_URL_MAX) {
        snprintf(err, errlen, "URL longer than %d characters", CLI_URL_MAX - 1);
        return -1;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) {
            snprintf(err, errlen, "URL '%.200s' contains a space or a control character", url);
            return -1;
        }
    return 0;
}

/* The twin of the coordinator's auth_host_is_loopback (http/auth.c), which the CLI does
 * not link: the same three forms, nothing resolved (a name is decided by its text). */
static int host_is_loopback(const char *host)
{
    if (strcasecmp(host, "localhost") == 0) return 1;
    struct in_addr a4;
    if (inet_pton(AF_INET, host, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    struct in6_addr a6;
    if (inet_pton(AF_INET6, host, &a6) == 1) return memcmp(&a6, &in6addr_loopback, sizeof a6) == 0;
    return 0;
}

int cli_token_transport_ok(const char *url, const char *token, int allowed, char *err, size_t errlen)
{
    if (!token || !*token || allowed || strncasecmp(url, "https://", 8) == 0) return 0;
    /* http://[USERINFO@]HOST[:PORT][/...]: the authority ends at the first / ? or # */
    const char *auth = strncasecmp(url, "http://", 7) == 0 ? url + 7 : url;
    size_t alen = strcspn(auth, "/?#");
    for (size_t i = alen; i > 0; i--)
        if (auth[i - 1] == '@') { /* the host follows the last '@' of the authority */
            auth += i;
            alen -= i;
            break;
        }
    char host[256] = "";
    size_t hlen;
    if (auth[0] == '[') {
        const char *rb = memchr(auth, ']', alen);
        hlen = rb ? (size_t)(rb - auth - 1) : 0;
        if (hlen < sizeof host) memcpy(host, auth + 1, hlen);
    } else {
        const char *colon = memchr(auth, ':', alen);
        hlen = colon ? (size_t)(colon - auth) : alen;
        if (hlen < sizeof host) memcpy(host, auth, hlen);
    }
    if (hlen < sizeof host) host[hlen] = 0;
    else host[0] = 0;
    if (host[0] && host_is_loopback(host)) return 0;
    snprintf(err, errlen,
             "refusing to send the API token in clear text to %.200s: plain http:// carries it readable to "
             "anyone on the way, and '%.100s' is not a loopback address. Use an https:// URL (--cacert FILE "
             "for a private CA), or allow it explicitly with --allow-insecure-token "
             "(PACER_ALLOW_INSECURE_TOKEN=1)",
             url, host);
    return -1;
}

static const cli_option_t *find_long(const char *name, size_t len)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strlen(OPTIONS[i].long_name) == len && strncmp(OPTIONS[i].long_name, name, len) == 0) return &OPTIONS[i];
    return NULL;
}

static const cli_option_t *find_short(char c)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (OPTIONS[i].short_name && OPTIONS[i].short_name == c) return &OPTIONS[i];
    return NULL;
}

/* " (did you mean --json?)" for an unknown long option name[0..len), "" when none is close. */
static void option_hint(const char *name, size_t len, char *out, size_t outlen)
{
    suggest_t s;
    suggest_init(&s, name, len);
    for (size_t i = 0; i < NOPTIONS; i++) suggest_offer(&s, OPTIONS[i].long_name, strlen(OPTIONS[i].long_name));
    suggest_hint(&s, "--", out, outlen);
}

/* The refusal of an unknown command: with the closest command's name, if one is close. */
static int unknown_command(const char *what, const char *name, char *err, size_t errlen)
{
    suggest_t s;
    char hint[SUGGEST_NAME_MAX + 32];
    suggest_init(&s, name, strlen(name));
    for (size_t i = 0; i < NCOMMANDS; i++) suggest_offer(&s, COMMANDS[i].name, strlen(COMMANDS[i].name));
    suggest_hint(&s, NULL, hint, sizeof hint);
    snprintf(err, errlen, "%sunknown command '%.60s'%s (pacer --help lists them)", what, name, hint);
    return -1;
}

static int parse_count(const char *opt, const char *s, long max, long *out, char *err, size_t errlen)
{
    if (numarg_long(s, 1, max, out) == 0) return 0;
    snprintf(err, errlen, "--%s: '%.40s' is not a whole number from 1 to %ld", opt, s, max);
    return -1;
}

/* A number whose bounds are the server's to enforce: only its form is checked here. */
static int parse_number(const char *opt, const char *s, long lo, long hi, long *out, char *err, size_t errlen)
{
    if (numarg_long(s, lo, hi, out) == 0) return 0;
    snprintf(err, errlen, "--%s: '%.40s' is not a whole number from %ld to %ld", opt, s, lo, hi);
    return -1;
}

static int parse_temperature(const char *s, double *out, char *err, size_t errlen)
{
    if (numarg_double(s, 0, 1e6, out) == 0) return 0;
    snprintf(err, errlen, "--temperature: '%.40s' is not a number from 0 to 1e6", s);
    return -1;
}

/* val one of the words in list (NULL-terminated), else -1 with err naming them */
static int parse_word(const char *opt, const char *val, const char *const *list, const char **out, char *err,
                      size_t errlen)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(val, list[i]) == 0) return *out = val, 0;
    snprintf(err, errlen, "--%s: '%.40s' is not %s or %s", opt, val, list[0], list[1]);
    return -1;
}

static const char *const FORMATS[] = {"onnx", "safetensors", NULL}, *const NAMES[] = {"nanogpt", "hf", NULL},
                         *const DTYPES[] = {"f32", "bf16", NULL};

/* Stores one option's value. */
static int apply(cli_args_t *a, const cli_option_t *o, const char *val, char *err, size_t errlen)
{
    a->seen |= o->bit;
    switch (o->bit) {
    case OPT_URL: a->url = val; break;
    case OPT_TOKEN: a->token = val; break;
    case OPT_TOKEN_FILE: a->token_file = val; break;
    case OPT_CACERT: a->cacert = val; break;
    case OPT_ALLOW_INSECURE_TOKEN: a->allow_insecure_token = 1; break;
    case OPT_JSON: a->json = 1; break;
    case OPT_HELP: a->help = 1; break;
    case OPT_VERSION: a->version = 1; break;
    case OPT_WATCH: a->watch = 1; break;
    case OPT_FOLLOW: a->follow = 1; break;
    case OPT_STATE: a->state = val; break;
    case OPT_OUTPUT: a->output = val; break;
    case OPT_LIMIT: return parse_count(o->long_name, val, 100000, &a->limit, err, errlen);
    case OPT_TAIL: return parse_count(o->long_name, val, 100000, &a->tail, err, errlen);
    case OPT_ROLE: a->role = val; break;
    case OPT_EXPIRES: return parse_count(o->long_name, val, 315360000, &a->expires, err, errlen);
    case OPT_WEIGHT: a->weight = val; break;
    case OPT_TOKENIZER: a->tokenizer = val; break;
    case OPT_DEADLINE: return parse_count(o->long_name, val, 604800, &a->deadline, err, errlen);
    case OPT_REASON: a->reason = val; break;
    case OPT_EVERY: return parse_count(o->long_name, val, 86400, &a->every, err, errlen);
    case OPT_MAX_TOKENS: return parse_count(o->long_name, val, 1000000, &a->max_tokens, err, errlen);
    case OPT_TEMPERATURE: return parse_temperature(val, &a->temperature, err, errlen);
    case OPT_TOP_K: return parse_number(o->long_name, val, 0, 1000000, &a->top_k, err, errlen);
    case OPT_SEED: return parse_number(o->long_name, val, 0, LONG_MAX, &a->seed, err, errlen);
    case OPT_CHECKPOINT: a->checkpoint = val; break;
    case OPT_PRECISION: a->precision = val; break;
    case OPT_FORMAT: return parse_word(o->long_name, val, FORMATS, &a->format, err, errlen);
    case OPT_NAMES: return parse_word(o->long_name, val, NAMES, &a->names, err, errlen);
    case OPT_DTYPE: return parse_word(o->long_name, val, DTYPES, &a->dtype, err, errlen);
    }
    return 0;
}

int cli_args_parse(int argc, char *const argv[], const char *env_url, const char *env_token, cli_args_t *a, char *err,
                   size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->limit = 50;
    const char *pos[4];
    int npos = 0, options_done = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (options_done || s[0] != '-' || strcmp(s, "-") == 0) {
            if (npos == (int)(sizeof pos / sizeof pos[0])) {
                snprintf(err, errlen, "too many arguments ('%.60s')", s);
                return -1;
            }
            pos[npos++] = s;
            continue;
        }
        if (strcmp(s, "--") == 0) {
            options_done = 1;
            continue;
        }
        const cli_option_t *o;
        const char *val = NULL;
        if (s[1] == '-') {
            const char *eq = strchr(s + 2, '=');
            size_t len = eq ? (size_t)(eq - s - 2) : strlen(s + 2);
            if (!(o = find_long(s + 2, len))) {
                char hint[SUGGEST_NAME_MAX + 32];
                option_hint(s + 2, len, hint, sizeof hint);
                snprintf(err, errlen, "unknown option '%.60s'%s", s, hint);
                return -1;
            }
            if (eq && !o->arg) {
                snprintf(err, errlen, "--%s takes no value", o->long_name);
                return -1;
            }
            if (eq) val = eq + 1;
        } else {
            if (!(o = find_short(s[1])) || (s[2] && !o->arg)) {
                snprintf(err, errlen, "unknown option '%.60s'", s);
                return -1;
            }
            if (s[2]) val = s + 2; /* -oFILE */
        }
        if (o->arg && !val) {
            if (i + 1 >= argc) {
                snprintf(err, errlen, "--%s needs a value (%s)", o->long_name, o->arg);
                return -1;
            }
            val = argv[++i];
        }
        if (apply(a, o, val, err, errlen) != 0) return -1;
    }

    const char *url = a->url ? a->url : env_url && *env_url ? env_url : CLI_DEFAULT_URL;
    if (!a->token && env_token && *env_token && !a->token_file) a->token = env_token;
    if (a->token && a->token_file && (a->seen & OPT_TOKEN)) {
        snprintf(err, errlen, "--token and --token-file: give one");
        return -1;
    }
    if (a->token_file) a->token = NULL;
    a->url = url;
    if (npos == 0) return 0; /* usage or --version */
    if (!(a->command = cli_command_find(pos[0]))) return unknown_command("", pos[0], err, errlen);
    const cli_command_t *c = a->command;
    int nargs = npos - 1;
    if (!a->help && (nargs < c->min_args || nargs > c->max_args)) {
        snprintf(err, errlen, "usage: pacer %s %s", c->name, c->args);
        return -1;
    }
    if (nargs > 0) a->arg = pos[1];
    if (nargs > 1) a->arg2 = pos[2];
    unsigned stray = a->seen & ~(c->opts | OPT_GLOBAL);
    for (size_t i = 0; stray && i < NOPTIONS; i++)
        if (stray & OPTIONS[i].bit) {
            snprintf(err, errlen, "%s: --%s does not apply to %s", c->name, OPTIONS[i].long_name, c->name);
            return -1;
        }
    if (c->cmd == CMD_HELP && a->arg && !cli_command_find(a->arg))
        return unknown_command("help: ", a->arg, err, errlen);
    if ((a->seen & OPT_EVERY) && c->cmd != CMD_WATCH && !a->watch) {
        snprintf(err, errlen, "%s: --every goes with --watch", c->name);
        return -1;
    }
    if (!a->help && cli_url_valid(a->url, err, errlen) != 0) return -1;
    return 0;
}

static void option_line(FILE *f, const cli_option_t *o)
{
    char head[64], shortf[8] = "    ";
    if (o->short_name) snprintf(shortf, sizeof shortf, "-%c, ", o->short_name);
    snprintf(head, sizeof head, "%s--%s%s%s", shortf, o->long_name, o->arg ? " " : "", o->arg ? o->arg : "");
    fprintf(f, "  %-24s %s\n", head, o->help);
}

void cli_usage(FILE *f)
{
    fprintf(f, "usage: pacer [options] COMMAND [ARGS]\n\n"
               "The command-line client of pacer-coordinator's REST API.\n\ncommands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char head[64];
        snprintf(head, sizeof head, "%s %s", COMMANDS[i].name, COMMANDS[i].args);
        fprintf(f, "  %-24s %s\n", head, COMMANDS[i].summary);
    }
    fprintf(f, "\noptions:\n");
    for (size_t i = 0; i < NOPTIONS; i++) option_line(f, &OPTIONS[i]);
    fprintf(f, "\nexit status: 0 ok; 1 the API answered an error (its problem detail is printed);\n"
               "2 bad usage; 3 the coordinator could not be reached; watch, logs -f and --watch:\n"
               "4 the job FAILED, 5 it was CANCELLED. docs/CLI.md has the details.\n");
}

void cli_command_help(FILE *f, const cli_command_t *c)
{
    fprintf(f, "usage: pacer %s%s%s [options]\n\n%s\n\noptions:\n", c->name, *c->args ? " " : "", c->args, c->help);
    for (size_t i = 0; i < NOPTIONS; i++)
        if (OPTIONS[i].bit & c->opts) option_line(f, &OPTIONS[i]);
    for (size_t i = 0; i < NOPTIONS; i++)
        if ((OPTIONS[i].bit & OPT_GLOBAL) && OPTIONS[i].bit != OPT_VERSION) option_line(f, &OPTIONS[i]);
}
