/* http/handlers.h - one function per endpoint (the route table in routes.c points here).
 * Each answers exactly once, through respond.h, and returns the MHD_Result. */
#ifndef PACER_HTTP_HANDLERS_H
#define PACER_HTTP_HANDLERS_H

#include <stddef.h>

#include <jansson.h>

#include "routes.h"
#include "spec.h"

/* Answers every handler file shares (handlers.c): a problem document with the request's
 * path as its instance; a coordinator error code as a problem; a bad query parameter,
 * named by err's prefix up to ':' ("points: must be ..."), as 400 invalid-parameter. */
int handler_problem(http_req_t *rq, json_t *p);
int handler_coord_error(http_req_t *rq, int code, const char *err);
int handler_bad_parameter(http_req_t *rq, const char *err);
/* The role rules (common/users.h) for the caller of rq on a job or model: 0 when allowed;
 * else answers 403 forbidden naming the rule and returns 1 (*ret the MHD result). */
int handler_refused(http_req_t *rq, int act, const char *kind, const char *id, int exists, const char *owner, int *ret);

int handle_jobs_list(http_req_t *rq);
int handle_jobs_submit(http_req_t *rq);
int handle_job_get(http_req_t *rq);
int handle_job_cancel(http_req_t *rq);
int handle_job_retry(http_req_t *rq);
int handle_job_nodes(http_req_t *rq);
int handle_job_metrics(http_req_t *rq);
int handle_job_events(http_req_t *rq);
int handle_job_logs(http_req_t *rq);
int handle_job_checkpoint(http_req_t *rq);
int handle_job_model_onnx(http_req_t *rq);
int handle_job_model_safetensors(http_req_t *rq);
int handle_job_trace(http_req_t *rq);    /* handlers_trace.c */
int handle_job_history(http_req_t *rq);  /* handlers_history.c */
int handle_job_generate(http_req_t *rq); /* handlers_generate.c */
int handle_events(http_req_t *rq);
int handle_experiments_list(http_req_t *rq);   /* handlers_experiments.c */
int handle_experiments_submit(http_req_t *rq); /* handlers_experiments.c */
int handle_experiment_get(http_req_t *rq);     /* handlers_experiments.c */
int handle_experiment_cancel(http_req_t *rq);  /* handlers_experiments.c */
int handle_cluster(http_req_t *rq);
int handle_cluster_reload(http_req_t *rq);
/* GET /api/v1/cluster/classes: the simulator's cluster file from the profiles (coord_cluster_classes). */
int handle_cluster_classes(http_req_t *rq);
int handle_cluster_benchmark(http_req_t *rq);
/* A drain's body (handlers_drain.c): {"deadline_s": N (default 300), "reason": "..."
 * (optional, shorter than rlen)}, any other field refused by name, so that a typo is not
 * a drain with defaults. 0, or -1 with err saying what is wrong. */
#define DRAIN_HTTP_REASON_MAX 200 /* coordinator/drain.c DRAIN_REASON_MAX */
int drain_body_parse(const char *text, size_t len, double *deadline_s, char *reason, size_t rlen, char *err,
                     size_t errlen);
int handle_host_drain(http_req_t *rq);
int handle_host_undrain(http_req_t *rq);
int handle_models(http_req_t *rq);       /* handlers_catalog.c */
int handle_model(http_req_t *rq);        /* handlers_catalog.c */
int handle_model_put(http_req_t *rq);    /* handlers_catalog.c */
int handle_model_delete(http_req_t *rq); /* handlers_catalog.c */
int handle_datasets(http_req_t *rq);     /* handlers_catalog.c */
int handle_users_list(http_req_t *rq);   /* handlers_users.c */
int handle_users_add(http_req_t *rq);    /* handlers_users.c */
int handle_user_delete(http_req_t *rq);  /* handlers_users.c */
int handle_user_update(http_req_t *rq);  /* handlers_users.c */
int handle_token_new(http_req_t *rq);    /* handlers_users.c */
int handle_whoami(http_req_t *rq);       /* handlers_users.c */
/* handlers_webhooks.c */
int handle_webhooks_add(http_req_t *rq);
int handle_webhooks_list(http_req_t *rq);
int handle_webhook_delete(http_req_t *rq);
int handle_openapi(http_req_t *rq);
int handle_healthz(http_req_t *rq);
int handle_prometheus(http_req_t *rq);
int handle_index(http_req_t *rq);
int handle_static(http_req_t *rq);
int handle_not_found(http_req_t *rq);

/* A submitted body as a job spec: NULL with *out filled, or the problem when the body is
 * not valid JSON or not a valid job spec (the body is decoded once). Pure. */
json_t *handlers_body_spec(const char *body, size_t len, job_spec_t *out);
/* The same without keeping the spec (the fuzz target drives it). */
json_t *handlers_body_problem(const char *body, size_t len);

#endif
