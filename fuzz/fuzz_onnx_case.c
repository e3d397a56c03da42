/* fuzz/fuzz_onnx_case.c - libFuzzer target for what pacer-worker --onnx-case reads from a
 * case of ONNX's backend tests (worker/onnx_case.c): a TensorProto file (input_K.pb,
 * output_K.pb: onnx_tensor_decode), and a case's model.onnx (onnx_graph_ops and
 * onnx_import_case, whose graph inputs after the activation are bound to given tensors and
 * whose output may be 4-D; onnx_import_case_inputs, which feeds the inputs of the
 * activation's batch with it and imports each output alone). Build and run: make
 * fuzz-onnx_case.
 *
 * Every input is tried as both. Seeds (fuzz/corpus/onnx_case/): a float tensor in raw data,
 * one in float_data, a Conv case's model whose weight is a graph input
 * (tests/tools/onnx_case_make.py's good/), a batch norm's training form (bn_training/). Invariants: a refused tensor leaves no data and
 * says why; a decoded one holds the product of its dims; the operator list is a string
 * within its buffer; an imported case's logits layer holds num_classes values per sample
 * and a forward of one zero image runs inside its buffers (AddressSanitizer); with every
 * input given, the first is always fed, and a forward of the packed zeros runs too (in
 * training mode where onnx_case_training says the case computes a batch norm's training
 * form, whose running statistics it names only then).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_import.h"

/* Models whose activations exceed this are only built, not run (time, not safety). */
#define RUN_MAX_FLOATS ((size_t)1 << 22)

static void try_case(const uint8_t *data, size_t size, const onnx_tensor_t *bound, int nbound)
{
    model_t *m = NULL;
    char err[512];
    err[0] = '\0';
    if (onnx_import_case(data, size, bound, nbound, 1, &m, err, sizeof err) != 0) {
        if (m || !err[0]) abort(); /* a refusal says why and leaves nothing */
        return;
    }
    const layer_t *last = &m->layers[m->nlayers - 1];
    if ((int64_t)last->OC * last->OH * last->OW != m->num_classes) abort();
    if (m->act_floats <= RUN_MAX_FLOATS && (size_t)m->C * m->H * m->W <= RUN_MAX_FLOATS) {
        float *x = calloc((size_t)m->C * m->H * m->W, sizeof(float));
        if (!x) abort();
        const int32_t y = 0;
        model_forward(m, x, &y, 1, 0);
        free(x);
    }
    model_free(m);
}

/* The case with its inputs in (in[0] the activation) for output k. */
static void try_inputs(const uint8_t *data, size_t size, const onnx_tensor_t *in, int nin, int k)
{
    model_t *m = NULL;
    char err[512];
    int packed[ONNX_CASE_MAX_TENSORS + 1], whole = -1, stat = -1;
    err[0] = '\0';
    /* a batch norm's training form: the forward in training mode, as --onnx-case runs it */
    const int train = onnx_case_training(data, size, k, &stat);
    if ((train != 0 && train != 1) || stat < 0 || stat > 2 || (stat && !train)) abort();
    if (onnx_import_case_inputs(data, size, in, nin, 2, k, packed, &whole, &m, err, sizeof err) != 0) {
        if (m || !err[0]) abort();
        return;
    }
    if (!packed[0] || (whole != 0 && whole != 1)) abort();
    size_t n = 1;
    for (int d = 0; d < m->in_shape.rank; d++) n *= (size_t)m->in_shape.dims[d];
    if (m->act_floats <= RUN_MAX_FLOATS && n <= RUN_MAX_FLOATS) {
        float *x = calloc(2 * n, sizeof(float));
        if (!x) abort();
        const int32_t y[2] = {0, 0};
        model_forward(m, x, y, 2, train);
        free(x);
    }
    model_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[512], ops[256];
    onnx_tensor_t t;
    err[0] = '\0';
    if (onnx_tensor_decode(data, size, &t, err, sizeof err) != 0) {
        if (t.data || t.ints || !err[0]) abort();
    } else {
        size_t n = 1;
        for (int i = 0; i < t.ndims; i++) n *= (size_t)t.dims[i];
        /* float32 (data) or int64 (ints), never both */
        if (n != t.count || t.ndims > 8 || (n && !t.data == !t.ints)) abort();
        if (n && t.data) t.data[n - 1] += 0.0f; /* inside the allocation */
        if (n && t.ints) t.ints[n - 1] += 0;
        onnx_tensor_free(&t);
    }
    if (onnx_graph_ops(data, size, ops, sizeof ops) == 0 && strlen(ops) >= sizeof ops) abort();
    /* a weight (4, 3, 3, 3) of ones: the seed case's W; other graphs refuse or ignore it */
    static float ones[4 * 3 * 3 * 3];
    for (size_t i = 0; i < sizeof ones / sizeof ones[0]; i++) ones[i] = 1.0f;
    const onnx_tensor_t w = {.name = "W", .ndims = 4, .dims = {4, 3, 3, 3}, .count = 108, .data = ones};
    try_case(data, size, NULL, 0);
    try_case(data, size, &w, 1);
    /* x (2, 3, 5, 5) and z of its shape (an activation where a graph reads it as data), or
     * the weight (a constant) */
    static float zeros[2 * 3 * 5 * 5];
    const onnx_tensor_t xz[2] = {{.name = "x", .ndims = 4, .dims = {2, 3, 5, 5}, .count = 150, .data = zeros},
                                 {.name = "z", .ndims = 4, .dims = {2, 3, 5, 5}, .count = 150, .data = zeros}};
    const onnx_tensor_t xw[2] = {xz[0], w};
    for (int k = 0; k < 2; k++) {
        try_inputs(data, size, xz, 2, k);
        try_inputs(data, size, xw, 2, k);
    }
    return 0;
}
