/* worker/modelfetch.c - see modelfetch.h. */
#include "modelfetch.h"

#include <hiredis/hiredis.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "lora.h"
#include "model.h"
#include "onnx_import.h"
#include "param_names.h"
#include "redis_keys.h"
#include "redis_url.h"
#include "sha256.h"

/* One fetch: connect, GET, done; generous for a large model over a slow link. */
#define MODELFETCH_TIMEOUT_S 30.0

static const char *g_dir, *g_url, *g_password_file;

void modelfetch_configure(const char *models_dir, const char *redis_url, const char *password_file)
{
    g_dir = models_dir;
    g_url = redis_url;
    g_password_file = password_file;
}

/* The bytes under KEY_MODEL for sha256, malloc'ed: 0, or -1 with err. */
static int fetch_redis(const char *sha256, uint8_t **data, size_t *len, char *err, size_t errlen)
{
    if (!g_url) return snprintf(err, errlen, "no --redis to fetch it from"), -1;
    redis_url_t url;
    char why[512];
    if (redis_url_parse(g_url, &url, why, sizeof why) != 0 ||
        (g_password_file && redis_url_read_password(&url, g_password_file, why, sizeof why) != 0)) {
        memset(url.password, 0, sizeof url.password);
        return snprintf(err, errlen, "Redis: %s", why), -1;
    }
    redisContext *rc = redis_url_connect(&url, MODELFETCH_TIMEOUT_S, why, sizeof why);
    memset(url.password, 0, sizeof url.password);
    if (!rc) return snprintf(err, errlen, "Redis: %s", why), -1;
    char key[128];
    snprintf(key, sizeof key, KEY_MODEL, sha256);
    redisReply *r = redisCommand(rc, "GET %s", key);
    int rc_ = -1;
    if (!r) {
        snprintf(err, errlen, "Redis: GET %s: %s", key, rc->errstr[0] ? rc->errstr : "connection lost");
    } else if (r->type == REDIS_REPLY_NIL) {
        snprintf(err, errlen, "Redis has no %s (the coordinator stores it at the upload)", key);
    } else if (r->type != REDIS_REPLY_STRING) {
        snprintf(err, errlen, "Redis: GET %s: %s", key, r->type == REDIS_REPLY_ERROR ? r->str : "not a string");
    } else if (r->len == 0 || r->len > ONNX_MAX_BYTES) {
        snprintf(err, errlen, "Redis: %s holds %zu bytes (1 to %zu)", key, (size_t)r->len, ONNX_MAX_BYTES);
    } else if (!(*data = malloc(r->len))) {
        snprintf(err, errlen, "out of memory for %zu bytes", (size_t)r->len);
    } else {
        memcpy(*data, r->str, r->len);
        *len = r->len;
        rc_ = 0;
    }
    if (r) freeReplyObject(r);
    redisFree(rc);
    return rc_;
}

/* The bytes of the last uploaded model read, kept for the model's build (train.c) and
 * --export-onnx after the spec's loader read them: one read per process. */
static char g_sha[SHA256_HEX_LEN + 1];
static uint8_t *g_data;
static size_t g_len;

int modelfetch_bytes(const char *name, const char *sha256, const uint8_t **data, size_t *len, char *err, size_t errlen)
{
    if (g_data && strcmp(g_sha, sha256) == 0) {
        *data = g_data;
        *len = g_len;
        return 0;
    }
    uint8_t *buf = NULL;
    size_t n = 0;
    char file_why[600] = "no --models-dir", why[600];
    char file[4200] = "Redis";
    int via_redis = 1;
    if (g_dir) {
        snprintf(file, sizeof file, "%s/%s.onnx", g_dir, sha256);
        via_redis = onnx_read_file(file, &buf, &n, file_why, sizeof file_why) != 0;
        if (via_redis) snprintf(file, sizeof file, "Redis");
    }
    if (!buf && fetch_redis(sha256, &buf, &n, why, sizeof why) != 0)
        return snprintf(err, errlen, "uploaded model %s (sha256 %.12s...): %s; %s", name, sha256,
                        strncmp(file_why, "onnx: ", 6) == 0 ? file_why + 6 : file_why, why),
               -1;
    char got[SHA256_HEX_LEN + 1];
    sha256_hex(buf, n, got);
    if (strcmp(got, sha256) != 0) {
        free(buf);
        return snprintf(err, errlen, "uploaded model %s: the bytes from %s hash to %.12s..., not %.12s...", name, file,
                        got, sha256),
               -1;
    }
    /* Where the bytes came from, once per rank: the proof a rank without the file got it. */
    if (via_redis) fprintf(stderr, "pacer-worker: uploaded model %s: read from Redis (%zu bytes)\n", name, n);
    free(g_data);
    g_data = buf;
    g_len = n;
    snprintf(g_sha, sizeof g_sha, "%s", sha256);
    *data = g_data;
    *len = g_len;
    return 0;
}

int modelfetch_loader(const char *path, const char *name, const char *sha256, char *err, size_t errlen)
{
    if (!sha256 || !sha256[0]) return onnx_import_catalog_add(path, name, NULL, err, errlen);
    const uint8_t *data;
    size_t len;
    if (modelfetch_bytes(path, sha256, &data, &len, err, errlen) != 0) return -1;
    char why[768];
    if (onnx_import_catalog_add_buffer(data, len, name, path, CATALOG_UPLOADED, why, sizeof why) == 0) return 0;
    snprintf(err, errlen, "uploaded model %s: %s", path, why);
    return -1;
}

/* m's parameter names as the summary's members (param_names.h): the lists, or
 * "parameter_names": null when they pass its bounds or a name is not printable ASCII (the
 * coordinator then leaves freeze and lora.targets to the worker). NULL out of memory. */
static json_t *names_json(const model_t *m)
{
    param_names_t p = {0};
    unsigned char *product = malloc((size_t)m->ntensors + 1);
    int ok = product != NULL;
    if (ok) model_lora_targetable(m, product);
    for (int t = 0; ok && t < m->ntensors; t++)
        if (!m->tensors[t].is_buffer) ok = param_names_add(&p, m->tensors[t].name, product[t]) == 0;
    free(product);
    json_t *j = ok ? param_names_json(&p) : json_pack("{s:n, s:n}", "parameter_names", "product_weights");
    param_names_free(&p);
    return j;
}

int modelfetch_check(const char *path)
{
    uint8_t *data = NULL;
    size_t len = 0;
    char err[1024];
    if (onnx_read_file(path, &data, &len, err, sizeof err) != 0) {
        fprintf(stderr, "pacer-worker: %s\n", err);
        return 2;
    }
    if (!onnx_is_model(data, len)) {
        free(data);
        fprintf(stderr, "pacer-worker: onnx: %s is not an ONNX model (empty, truncated, or no graph)\n", path);
        return 3;
    }
    model_t *model = NULL;
    int rc = onnx_import_buffer(data, len, "check", 1, &model, err, sizeof err);
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(data, len, hex);
    free(data);
    if (rc != 0) {
        fprintf(stderr, "pacer-worker: %s\n", err);
        return 2;
    }
    catalog_model_t m;
    model_describe(model, &m);
    json_t *names = names_json(model);
    model_free(model);
    json_t *j = json_pack("{s:[i,i,i], s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:s}", "input", m.C, m.H, m.W,
                          "classes", m.classes, "layers", m.layers, "parameters", (json_int_t)m.params, "buffers",
                          (json_int_t)m.buffers, "fixed", (json_int_t)m.fixed, "activations_per_sample",
                          (json_int_t)m.acts_per_sample, "activation_gradients_per_sample",
                          (json_int_t)m.dacts_per_sample, "argmax_per_sample", (json_int_t)m.argmax_per_sample,
                          "flops_per_sample", m.flops_per_sample, "sha256", hex);
    if (j && (!names || json_object_update(j, names) != 0)) {
        json_decref(j);
        j = NULL;
    }
    json_decref(names);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!text) {
        fprintf(stderr, "pacer-worker: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    free(text);
    return 0;
}
