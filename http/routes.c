/* http/routes.c - see routes.h. The table is the API: docs/openapi.json describes the
 * same list, and tests/unit/test_http.c checks that every row is documented there. */
#include "routes.h"

#include <stdio.h>
#include <string.h>

#include "handlers.h"
#include "users.h"

/* What each route that is not a plain read does, for the role rules (common/users.h's
 * user_action_t; http/server.c's route_forbidden asks routes_action). A separate
 * table, so that a new row of ROUTES needs no field more. */
static const struct {
    const char *method, *pattern;
    user_action_t act;
} ACTIONS[] = {
    {"POST", "/api/v1/jobs", USER_ACT_SUBMIT},
    {"DELETE", "/api/v1/jobs/{id}", USER_ACT_CANCEL},
    {"POST", "/api/v1/jobs/{id}/retry", USER_ACT_RETRY},
    /* the owner or an admin, as retry (it spends the cluster's CPU on the job's model), or
     * every user under --viewers-generate (http/server.c's route_forbidden) */
    {"POST", "/api/v1/jobs/{id}/generate", USER_ACT_GENERATE},
    {"POST", "/api/v1/experiments", USER_ACT_SUBMIT},
    {"DELETE", "/api/v1/experiments/{id}", USER_ACT_CANCEL},
    {"POST", "/api/v1/cluster/reload", USER_ACT_CLUSTER},
    {"POST", "/api/v1/cluster/benchmark", USER_ACT_CLUSTER},
    {"POST", "/api/v1/cluster/hosts/{name}/drain", USER_ACT_CLUSTER},
    {"DELETE", "/api/v1/cluster/hosts/{name}/drain", USER_ACT_CLUSTER},
    {"PUT", "/api/v1/models/{name}", USER_ACT_MODEL_PUT},
    {"DELETE", "/api/v1/models/{name}", USER_ACT_MODEL_DELETE},
    {"GET", "/api/v1/users", USER_ACT_USERS},
    {"POST", "/api/v1/users", USER_ACT_USERS},
    {"PUT", "/api/v1/users/{name}", USER_ACT_USERS},
    {"DELETE", "/api/v1/users/{name}", USER_ACT_USERS},
    {"POST", "/api/v1/token", USER_ACT_TOKEN_NEW},
    /* members subscribe to their own jobs: the coordinator checks whose (webhook.h) */
    {"POST", "/api/v1/webhooks", USER_ACT_SUBMIT},
    {"DELETE", "/api/v1/webhooks/{id}", USER_ACT_SUBMIT},
};

/* What each ROUTE_JSON_BODY route reads, for its 415 (http/server.c): "send X with
 * Content-Type: application/json". A separate table, as ACTIONS. */
static const struct {
    const char *method, *pattern, *body;
} BODIES[] = {
    {"POST", "/api/v1/jobs", "the job spec"},
    {"POST", "/api/v1/jobs/{id}/generate", "the generate request ({\"prompt\": \"...\", \"max_tokens\": N, ...})"},
    {"POST", "/api/v1/experiments", "the experiment ({\"name\", \"spec\", \"search\"})"},
    {"POST", "/api/v1/cluster/hosts/{name}/drain", "the drain ({\"deadline_s\": N, \"reason\": \"...\"}, or no body)"},
    {"POST", "/api/v1/users", "the user ({\"name\", \"role\", \"expires_in_s\"})"},
    {"PUT", "/api/v1/users/{name}",
     "the user's weight and limits ({\"weight\", \"max_queued\", \"max_slots\", \"max_models\", \"max_priority\"})"},
    {"POST", "/api/v1/webhooks", "the webhook ({\"url\", \"events\", \"secret\", \"job\"})"},
};

static const route_t ROUTES[] = {
    {"GET", "/api/v1/jobs", handle_jobs_list, 0},
    {"POST", "/api/v1/jobs", handle_jobs_submit, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs/{id}", handle_job_get, 0},
    {"DELETE", "/api/v1/jobs/{id}", handle_job_cancel, ROUTE_MUTATES},
    {"POST", "/api/v1/jobs/{id}/retry", handle_job_retry, ROUTE_MUTATES},
    {"POST", "/api/v1/jobs/{id}/generate", handle_job_generate, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"GET", "/api/v1/jobs/{id}/nodes", handle_job_nodes, 0},
    {"GET", "/api/v1/jobs/{id}/metrics", handle_job_metrics, 0},
    {"GET", "/api/v1/jobs/{id}/events", handle_job_events, ROUTE_STREAM},
    {"GET", "/api/v1/jobs/{id}/logs", handle_job_logs, 0},
    {"GET", "/api/v1/jobs/{id}/checkpoint", handle_job_checkpoint, 0},
    {"GET", "/api/v1/jobs/{id}/model.onnx", handle_job_model_onnx, 0},
    {"GET", "/api/v1/jobs/{id}/model.safetensors", handle_job_model_safetensors, 0},
    {"GET", "/api/v1/jobs/{id}/trace", handle_job_trace, 0},
    {"GET", "/api/v1/jobs/{id}/history", handle_job_history, 0},
    {"GET", "/api/v1/events", handle_events, ROUTE_STREAM},
    {"GET", "/api/v1/experiments", handle_experiments_list, 0},
    {"POST", "/api/v1/experiments", handle_experiments_submit, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"GET", "/api/v1/experiments/{id}", handle_experiment_get, 0},
    {"DELETE", "/api/v1/experiments/{id}", handle_experiment_cancel, ROUTE_MUTATES},
    {"GET", "/api/v1/cluster", handle_cluster, 0},
    {"GET", "/api/v1/cluster/classes", handle_cluster_classes, 0},
    {"POST", "/api/v1/cluster/reload", handle_cluster_reload, ROUTE_MUTATES},
    {"POST", "/api/v1/cluster/benchmark", handle_cluster_benchmark, ROUTE_MUTATES},
    {"POST", "/api/v1/cluster/hosts/{name}/drain", handle_host_drain, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"DELETE", "/api/v1/cluster/hosts/{name}/drain", handle_host_undrain, ROUTE_MUTATES},
    {"GET", "/api/v1/models", handle_models, 0},
    {"GET", "/api/v1/models/{name}", handle_model, 0},
    {"PUT", "/api/v1/models/{name}", handle_model_put, ROUTE_MUTATES | ROUTE_BINARY_BODY},
    {"DELETE", "/api/v1/models/{name}", handle_model_delete, ROUTE_MUTATES},
    {"GET", "/api/v1/datasets", handle_datasets, 0},
    {"GET", "/api/v1/users", handle_users_list, 0},
    {"POST", "/api/v1/users", handle_users_add, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"PUT", "/api/v1/users/{name}", handle_user_update, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"DELETE", "/api/v1/users/{name}", handle_user_delete, ROUTE_MUTATES},
    {"POST", "/api/v1/token", handle_token_new, ROUTE_MUTATES},
    {"GET", "/api/v1/webhooks", handle_webhooks_list, 0},
    {"POST", "/api/v1/webhooks", handle_webhooks_add, ROUTE_MUTATES | ROUTE_JSON_BODY},
    {"DELETE", "/api/v1/webhooks/{id}", handle_webhook_delete, ROUTE_MUTATES},
    {"GET", "/api/v1/whoami", handle_whoami, 0},
    {"GET", "/api/v1/openapi.json", handle_openapi, 0},
    {"GET", "/healthz", handle_healthz, ROUTE_PUBLIC},
    {"GET", "/metrics", handle_prometheus, 0},
    {"GET", "/", handle_index, ROUTE_PUBLIC},
    {"GET", "/static/{path*}", handle_static, ROUTE_PUBLIC},
    {NULL, NULL, handle_not_found, ROUTE_PUBLIC}, /* sentinel */
};
#define NROUTES (sizeof ROUTES / sizeof ROUTES[0] - 1)

int routes_action(const route_t *r)
{
    if (!r || !r->method) return USER_ACT_READ;
    for (size_t i = 0; i < sizeof ACTIONS / sizeof ACTIONS[0]; i++)
        if (strcmp(ACTIONS[i].method, r->method) == 0 && strcmp(ACTIONS[i].pattern, r->pattern) == 0)
            return ACTIONS[i].act;
    return (r->flags & ROUTE_MUTATES) ? USER_ACT_ADMIN : USER_ACT_READ;
}

const char *routes_json_body(const route_t *r)
{
    for (size_t i = 0; r && r->method && i < sizeof BODIES / sizeof BODIES[0]; i++)
        if (strcmp(BODIES[i].method, r->method) == 0 && strcmp(BODIES[i].pattern, r->pattern) == 0)
            return BODIES[i].body;
    return "a JSON body";
}

const route_t *routes_table(size_t *n)
{
    *n = NROUTES;
    return ROUTES;
}

int route_pattern_match(const char *pattern, const char *path, route_match_t *m)
{
    const char *p = pattern, *s = path;
    int np = 0;
    if (*p != '/' || *s != '/') return 0;
    while (*p && *s) {
        if (*p == '{') {
            const char *close = strchr(p, '}');
            if (!close) return 0;
            int rest = close > p + 1 && close[-1] == '*';
            /* The capture: one segment, or everything that is left. */
            size_t n = rest ? strlen(s) : strcspn(s, "/");
            if (n == 0 || n >= ROUTE_PARAM_LEN || np >= ROUTE_PARAMS_MAX) return 0;
            memcpy(m->params[np], s, n);
            m->params[np][n] = 0;
            np++;
            p = close + 1;
            s += n;
            continue;
        }
        if (*p != *s) return 0;
        p++, s++;
    }
    if (*p || *s) return 0;
    m->nparams = np;
    return 1;
}

int routes_target_nul(const char *raw)
{
    if (!raw) return ROUTE_NUL_NONE;
    const char *q = strchr(raw, '?'), *nul = strstr(raw, "%00");
    if (!nul) return ROUTE_NUL_NONE;
    return q && nul > q ? ROUTE_NUL_QUERY : ROUTE_NUL_PATH;
}

static int method_matches(const char *route_method, const char *method)
{
    return strcmp(route_method, method) == 0 || (strcmp(method, "HEAD") == 0 && strcmp(route_method, "GET") == 0);
}

static void allow_add(char *allow, size_t len, const char *method)
{
    size_t used = strlen(allow);
    snprintf(allow + used, len - used, "%s%s", used ? ", " : "", method);
}

const route_t *routes_match(const char *method, const char *path, route_match_t *m)
{
    memset(m, 0, sizeof *m);
    m->route = &ROUTES[NROUTES];
    m->status = 404;
    if (!method || !path) return m->route;
    route_match_t probe;
    for (size_t i = 0; i < NROUTES; i++) {
        memset(&probe, 0, sizeof probe);
        if (!route_pattern_match(ROUTES[i].pattern, path, &probe)) continue;
        if (method_matches(ROUTES[i].method, method)) {
            char allow[sizeof m->allow];
            memcpy(allow, m->allow, sizeof allow);
            *m = probe;
            memcpy(m->allow, allow, sizeof allow);
            m->route = &ROUTES[i];
            m->status = 0;
            return m->route;
        }
        allow_add(m->allow, sizeof m->allow, ROUTES[i].method);
        if (strcmp(ROUTES[i].method, "GET") == 0) allow_add(m->allow, sizeof m->allow, "HEAD");
        m->status = 405;
    }
    return m->route;
}
