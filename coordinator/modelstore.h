/* coordinator/modelstore.h - uploaded ONNX models (PUT /api/v1/models/{name}): where
 * their bytes live and how a name finds them.
 *
 * Stored by content: STATE_DIR/models/<sha256>.onnx (written whole or not at all), the
 * same bytes in Redis under KEY_MODEL (pacer:model:<sha256>) for ranks on hosts without
 * the state directory, and STATE_DIR/models/index.json, the names: {"models": [Entry]},
 * an Entry being the catalog's figures of the model (modelstore_entry_parse). The
 * coordinator cannot link model/ (the layer rule), so an upload is validated by running
 * `pacer-worker --check-onnx FILE` (worker/modelfetch.h), bounded in time, whose JSON line
 * is the entry and whose message is the refusal. At start the index puts every entry back
 * into the catalog (and the bytes back into Redis when missing), so uploaded models
 * survive restarts; a job spec then names one as {"onnx": NAME} (common/spec.c pins its
 * sha256, run_launch.c passes --models-dir to the worker).
 *
 * The model's parameter names (the validator's "parameter_names" and "product_weights",
 * common/param_names.h) are kept beside its bytes as STATE_DIR/models/<sha256>.params.json,
 * written before the index names the model and removed with its bytes: job admission
 * (coordinator/admission.c) checks a spec's freeze and lora.targets against them. A model
 * uploaded before they were recorded, or whose names pass their bounds, has none: its
 * globs are checked by the worker at the job's start only.
 *
 * One mutex serialises uploads and deletions (the index is rewritten whole each time).
 */
#ifndef PACER_MODELSTORE_H
#define PACER_MODELSTORE_H

#include <jansson.h>
#include <stddef.h>

#include "catalog.h"
#include "param_names.h"

typedef struct coordinator coordinator_t;

#define MODELSTORE_CHECK_TIMEOUT_S 60.0  /* the validator's time: a large model imports in seconds */
#define MODELSTORE_CHECK_DEFAULT_MB 4096 /* the validator's memory when this machine's is unknown */

/* The index file's text (len bytes, not NUL-terminated) into at most max entries: the
 * count, or -1 with err (not JSON, not {"models": [...]}, an entry that does not parse,
 * a name twice, more than max). */
int modelstore_index_parse(const char *text, size_t len, catalog_model_t *out, int max, char *err, size_t errlen);

/* At start (coordinator_start, before adoption re-reads the specs of running jobs): every
 * indexed model back into the catalog, and its bytes into Redis where they are missing.
 * A broken index or a missing file is logged and skipped, never fatal. */
void modelstore_start(coordinator_t *c);

/* The parameter names of the uploaded model of content sha256 sha into *out: 1 with them,
 * 0 when none are kept (also a file that does not read back within the bounds: logged). */
int modelstore_param_names(const coordinator_t *c, const char *sha, param_names_t *out);

/* STATE_DIR/models: what run_launch.c passes as the worker's --models-dir. */
void modelstore_dir(const coordinator_t *c, char *out, size_t len);

#endif
