/* fuzz/fuzz_onnx.c - libFuzzer target for the ONNX importer (onnx_import_buffer,
 * model/onnx_import.c, with protobuf-c's decoder). Build and run: make fuzz-onnx.
 *
 * The input is an ONNX file as it is; the seed (fuzz/corpus/onnx/tiny.onnx) is the small
 * network tests/tools/onnx_export.py writes, so mutations reach every mapped operator and
 * attribute. Invariants: a refusal leaves no model and says why; an accepted model has
 * layers, its logits layer is (classes, 1, 1), and an evaluation and a training step over
 * one zero image run inside its buffers (AddressSanitizer checks every geometry the
 * importer accepted against what the kernels touch).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* Models whose activations exceed this are only built, not run (time, not safety). */
#define RUN_MAX_FLOATS ((size_t)1 << 22)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    model_t *m = NULL;
    char err[512];
    err[0] = '\0';
    if (onnx_import_buffer(data, size, "fuzz", 1, &m, err, sizeof err) != 0) {
        if (m || !err[0]) abort(); /* a refusal says why and leaves nothing */
        return 0;
    }
    if (!m || m->nlayers < 1) abort();
    const layer_t *last = &m->layers[m->nlayers - 1];
    if (last->OC != m->num_classes || last->OH != 1 || last->OW != 1) abort();
    if (m->act_floats <= RUN_MAX_FLOATS && (size_t)m->C * m->H * m->W <= RUN_MAX_FLOATS) {
        float *x = calloc((size_t)m->C * m->H * m->W, sizeof(float));
        if (!x) abort();
        const int32_t y = 0;
        model_forward(m, x, &y, 1, 0);
        model_forward(m, x, &y, 1, 1);
        model_backward(m, x, &y, 1, 1.0f);
        free(x);
    }
    model_free(m);
    return 0;
}
