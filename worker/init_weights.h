/* worker/init_weights.h - the spec's init: a fresh run's starting weights from another
 * run's (a pacer checkpoint of the same model, or a safetensors file matched by tensor name
 * and shape), without their optimizer state, step or data position.
 *
 * A safetensors file's tensors are matched to the model's as the export names and shapes
 * them (model/st_export.h: the built-in GPT's nanoGPT names, an imported model's
 * initializer names, the ONNX export's shapes), Hugging Face GPT-2's names and Conv1D
 * layout read back as the built-in GPT's (common/st_gpt2.h). With init.strict every tensor
 * of the model must be in the file with its shape and every tensor of the file in the
 * model, else the run is refused naming the first that is not; without it the matching ones are loaded and
 * the rest reported. A checkpoint holds no tensor names, only a hash of its model's layout:
 * it loads into the same model only (its parameters and buffers; strict or not).
 *
 * The spec's freeze (common/freeze.h) is applied here too: the tensors it names take no
 * weight update (model.h's no_update): the host backward computes no gradient for them
 * (their weight products skipped), the optimizer holds and updates no state of theirs
 * (model_decay_run; their optimizer state's pages are never written) and the all-reduce
 * leaves them out (worker/compress.h). So is
 * its lora (model/lora.h): the adapters' graph, every tensor but theirs frozen, and the
 * model the exports write (merged, or the adapters apart under PEFT's names).
 */
#ifndef PACER_INIT_WEIGHTS_H
#define PACER_INIT_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "worker.h"

/* Loads w->spec's init source into w->model (and the device's copy) and zeroes the
 * optimizer state. *report (new reference, or NULL when the spec has no init) is the
 * summary's "init": {"source", "loaded" (tensors), "missing", "unexpected", "mismatched"
 * (names), and "names": "hf" when the file was Hugging Face GPT-2's (common/st_gpt2.h)}. 0, or -1 with err naming the file and what does not match. */
int worker_init_weights(worker_t *w, json_t **report, char *err, size_t errlen);

/* The spec's freeze: marks every parameter tensor whose name a glob matches (model.h's
 * no_update) and counts w->trainable_params and w->frozen_params. 0, or -1 with err naming
 * a glob that matches no parameter tensor. */
int worker_apply_freeze(worker_t *w, char *err, size_t errlen);
/* Zeroes the gradients of the frozen tensors in w->model->grads after a GPU rank's
 * backward (the device's backward computes them all; the host's computes none, and its
 * zeros of worker_apply_freeze stay): nothing of theirs is summed, clipped or applied. */
void worker_zero_frozen_grads(worker_t *w);

/* The spec's lora: w->model replaced by its graph with adapters (model/lora.h), the
 * adapters initialised from the seed; an eval_sample then reads merged weights
 * (w->lora_sample). Before the device copy and the optimizer state are made. 0, or -1 with
 * err naming a target that matches no product's weight. */
int worker_apply_lora(worker_t *w, char *err, size_t errlen);
/* The model the exports write: w->model, or with lora its graph without adapters (batch 1,
 * a new model the caller frees when it is not w->model), merged when merge (W + scale B A)
 * else holding the base weights. 0, or -1 with err. */
int worker_export_model(const worker_t *w, int merge, model_t **out, char *err, size_t errlen);
/* lora.export separate: base's tensors as st_export writes them (src, len: the ONNX bytes
 * the model came from, NULL for a built-in one), then each adapter's A (rank, IN) and B
 * (OUT, rank) under PEFT's names, into the safetensors file path. 0, or -1 with err. */
int worker_export_separate(const worker_t *w, const model_t *base, const uint8_t *src, size_t len, const char *path,
                           char *err, size_t errlen);

#endif
