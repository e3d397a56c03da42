/* worker/modelfetch.h - the worker's side of uploaded models (PUT /api/v1/models/{name}):
 * the spec's ONNX loader for "model": {"onnx": NAME, "sha256": HEX}, and
 * `pacer-worker --check-onnx FILE`, the validator the coordinator runs on an upload.
 *
 * An uploaded model's bytes are stored by the coordinator as DIR/<sha256>.onnx (its state
 * directory's models/, passed as --models-dir) and in Redis (KEY_MODEL). A rank reads the
 * file when it can open it, else GETs the key with its own short connection (--redis):
 * once, while the spec is read at set-up, never in a step. Either way the bytes must hash
 * to the spec's sha256 before they are imported, so a rank on another host trains exactly
 * the model the coordinator validated, without a shared file system.
 */
#ifndef PACER_MODELFETCH_H
#define PACER_MODELFETCH_H

#include <stddef.h>
#include <stdint.h>

/* Where the loader looks: the models directory (NULL = none) and the Redis URL and
 * password file (NULL = no Redis). Kept by pointer: the caller's strings (argv) must
 * outlive the spec's loading. */
void modelfetch_configure(const char *models_dir, const char *redis_url, const char *password_file);

/* The spec's ONNX loader (spec_onnx_loader_fn): without sha256 a file by path
 * (onnx_import_catalog_add); with it the uploaded model path names, found as above,
 * added to the catalog as name (source uploaded). 0, or -1 with err naming where it
 * looked and what was wrong. */
int modelfetch_loader(const char *path, const char *name, const char *sha256, char *err, size_t errlen);

/* The bytes of uploaded model name (sha256 given), found as above and checked against
 * the hash, owned here and kept for the process (the spec's loader reads them once; the
 * model's build and --export-onnx take them again from memory). 0, or -1 with err. */
int modelfetch_bytes(const char *name, const char *sha256, const uint8_t **data, size_t *len, char *err, size_t errlen);

/* pacer-worker --check-onnx FILE: imports the file and prints one JSON line on stdout,
 * {"input": [C, H, W], "classes", "layers", "parameters", "buffers", "fixed",
 * "activations_per_sample", "activation_gradients_per_sample", "argmax_per_sample",
 * "flops_per_sample", "sha256"} (the
 * catalog's figures: everything an entry needs) and "parameter_names", "product_weights"
 * (common/param_names.h: the names freeze and lora.targets are checked against at
 * submission, within its bounds, else null), or the importer's message on stderr.
 * Returns the exit status: 0 imported, 2 refused (an unsupported operator, a graph
 * pacer cannot train, an unreadable file), 3 not an ONNX model at all (empty, does not
 * decode, no graph). */
int modelfetch_check(const char *path);

#endif
