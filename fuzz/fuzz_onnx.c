/* fuzz/fuzz_onnx.c - libFuzzer target for the ONNX importer (onnx_import_buffer,
 * model/onnx_import.c, with protobuf-c's decoder). Build and run: make fuzz-onnx.
 *
 * The input is an ONNX file as it is; the seed (fuzz/corpus/onnx/tiny.onnx) is the small
 * network tests/tools/onnx_export.py writes, so mutations reach every mapped operator and
 * attribute; the hostile-* seeds are issue 42's files from tests/tools/onnx_hostile.py
 * (Pad and Conv pads of 8000, nested If subgraphs, empty initializers), small, so that
 * mutations reach the wire walk's and the memory bound's refusals. The importer runs under
 * a memory bound of FUZZ_MEMORY_BOUND (a model beyond it is refused before it is
 * allocated, so no input can exhaust the fuzzer's memory). Invariants: an accepted model's
 * buffers fit the bound; a refusal leaves no model and says why; an accepted model has
 * layers, its logits layer is (classes, 1, 1) (a language model's: (T, classes), a label per
 * position), and an evaluation and a training step over
 * one zero image run inside its buffers (AddressSanitizer checks every geometry the
 * importer accepted against what the kernels touch). An accepted language model
 * (gen_graph_check) also generates greedily past its window, by positions where
 * model/decode.h plans it and with the cache off, inside its buffers (the seed gpt-tiny.onnx
 * is a nanoGPT-style module of 1 block, width 4, window 4, 8 ids, its names shortened to
 * fit the input bound). The accepted model then exports
 * (onnx_export_buffer, model/onnx_export.c) into a file that imports again as a model of
 * the same parameter and buffer counts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "generate.h"
#include "onnx_export.h"
#include "onnx_import.h"

/* Models whose activations exceed this are only built, not run (time, not safety). */
#define RUN_MAX_FLOATS ((size_t)1 << 22)
/* The importer's memory bound here: a model's decoding and buffers at batch 1. */
#define FUZZ_MEMORY_BOUND ((size_t)256 << 20)

/* Greedy generation of 2 T + 1 tokens from a prompt of T + 1 ids (one cut), the cache on
 * and off: each a run of the window's positions and its re-feeds. */
static void generate_twice(model_t *m)
{
    gen_state_t *s = NULL;
    char err[256];
    if (gen_graph_check(m, err, sizeof err) != 0) return;
    if (gen_open(m, &s, err, sizeof err) != 0) abort();
    const int T = m->C, n = 2 * T + 1 < GEN_MAX_TOKENS ? 2 * T + 1 : GEN_MAX_TOKENS;
    uint32_t *prompt = calloc((size_t)T + 1, sizeof *prompt), *out = calloc((size_t)n, sizeof *out);
    if (!prompt || !out) abort();
    for (int i = 0; i <= T; i++) prompt[i] = (uint32_t)(i % m->num_classes);
    const gen_opts_t o = {.max_tokens = n};
    size_t cut;
    for (int on = 1; on >= 0; on--) {
        gen_use_cache(s, on);
        if (gen_run(s, prompt, (size_t)T + 1, &o, NULL, NULL, out, &cut, err, sizeof err) != n || cut != 1) abort();
    }
    free(prompt);
    free(out);
    gen_close(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    onnx_import_set_memory_bound(FUZZ_MEMORY_BOUND);
    model_t *m = NULL;
    char err[512];
    err[0] = '\0';
    if (onnx_import_buffer(data, size, "fuzz", 1, &m, err, sizeof err) != 0) {
        if (m || !err[0]) abort(); /* a refusal says why and leaves nothing */
        return 0;
    }
    if (!m || m->nlayers < 1) abort();
    /* what alloc_buffers took fits the bound (model_build_bytes, checked after each node) */
    const size_t f = sizeof(float);
    if (f * (3 * m->nparams + m->nbuffers + 2 * m->act_floats + m->aux_floats + m->ws_floats) > FUZZ_MEMORY_BOUND)
        abort();
    /* a classifier's logits layer is (classes, 1, 1); a language model's (T, V): a label
     * per position (model.h's positions) */
    const layer_t *last = &m->layers[m->nlayers - 1];
    if (m->positions < 1 || model_shape_count(&last->shape) != (size_t)m->positions * m->num_classes) abort();
    if (m->positions == 1 && (last->OC != m->num_classes || last->OH != 1 || last->OW != 1)) abort();
    if (m->act_floats <= RUN_MAX_FLOATS && (size_t)m->C * m->H * m->W <= RUN_MAX_FLOATS) {
        float *x = calloc((size_t)m->C * m->H * m->W, sizeof(float));
        int32_t *y = calloc((size_t)m->positions, sizeof(int32_t));
        if (!x || !y) abort();
        model_forward(m, x, y, 1, 0);
        model_forward(m, x, y, 1, 1);
        model_backward(m, x, y, 1, 1.0f);
        free(x);
        free(y);
        generate_twice(m);
    }
    uint8_t *out = NULL;
    size_t outlen = 0;
    if (onnx_export_buffer(data, size, m, &out, &outlen, err, sizeof err) != 0) abort();
    model_t *again = NULL;
    if (onnx_import_buffer(out, outlen, "fuzz", 1, &again, err, sizeof err) != 0) abort();
    if (again->nparams != m->nparams || again->nbuffers != m->nbuffers) abort();
    model_free(again);
    free(out);
    model_free(m);
    return 0;
}
