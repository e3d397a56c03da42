/* model/onnx_export.c - see onnx_export.h.
 *
 * The decoded ModelProto is changed in place only through shallow edits (a node's counts and
 * op_type, an initializer's data pointers), each undone before protobuf-c frees the message,
 * so protobuf-c only ever frees what it allocated. */
#include "onnx_export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "onnx.pb-c.h"
#include "onnx_import.h"

/* One initializer's data as decoded, put back before the message is freed. */
typedef struct {
    Onnx__TensorProto *t;
    protobuf_c_boolean has_raw_data;
    ProtobufCBinaryData raw_data;
    size_t n_float_data;
} saved_tensor_t;

/* The tensor a value name holds: its initializer, or through Identity nodes (torch's
 * exporter writes one for each initializer equal to another, e.g. a fresh batch norm's
 * running variance and weight, both ones) the initializer or Constant behind it; NULL if
 * none. */
static const Onnx__TensorProto *source_tensor(const Onnx__GraphProto *g, const char *name)
{
    for (size_t hop = 0; name && hop <= g->n_node; hop++) {
        for (size_t k = 0; k < g->n_initializer; k++)
            if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0) return g->initializer[k];
        const Onnx__NodeProto *n = NULL;
        for (size_t i = 0; i < g->n_node && !n; i++)
            if (g->node[i]->n_output == 1 && g->node[i]->output[0] && strcmp(g->node[i]->output[0], name) == 0)
                n = g->node[i];
        if (!n || !n->op_type) return NULL;
        if (strcmp(n->op_type, "Constant") == 0) {
            for (size_t a = 0; a < n->n_attribute; a++)
                if (n->attribute[a]->name && strcmp(n->attribute[a]->name, "value") == 0) return n->attribute[a]->t;
            return NULL;
        }
        if (strcmp(n->op_type, "Identity") != 0 || n->n_input != 1) return NULL;
        name = n->input[0];
    }
    return NULL;
}

/* The weights: every tensor of m into the initializer of its name, as raw little-endian
 * floats (the importer read them so, tensor_floats). A tensor whose name is not an
 * initializer's (an Identity of one, a Constant) gets an initializer of its own in extra
 * (trained, it no longer equals the one it was tied to), appended to the list in inits;
 * live_nodes then drops the node that defined the name. */
static int put_weights(Onnx__GraphProto *g, const model_t *m, saved_tensor_t *saved, Onnx__TensorProto *extra,
                       Onnx__TensorProto **inits, char *err, size_t errlen)
{
    size_t nextra = 0;
    for (int i = 0; i < m->ntensors; i++) {
        const tensor_info_t *ti = &m->tensors[i];
        Onnx__TensorProto *t = NULL;
        for (size_t k = 0; k < g->n_initializer && !t; k++)
            if (g->initializer[k]->name && strcmp(g->initializer[k]->name, ti->name) == 0) t = g->initializer[k];
        const Onnx__TensorProto *src = t ? t : source_tensor(g, ti->name);
        if (!src)
            return snprintf(err, errlen, "onnx: no initializer '%s' (not the file the model was imported from)",
                            ti->name),
                   -1;
        size_t count = 1;
        for (size_t d = 0; d < src->n_dims; d++) count *= src->dims[d] > 0 ? (size_t)src->dims[d] : 0;
        if (count != ti->count || src->data_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
            return snprintf(err, errlen,
                            "onnx: initializer '%s' has %zu elements of type %d, the model's tensor %zu floats "
                            "(not the file the model was imported from)",
                            ti->name, count, (int)src->data_type, ti->count),
                   -1;
        if (t) {
            saved[i] = (saved_tensor_t){t, t->has_raw_data, t->raw_data, t->n_float_data};
        } else {
            t = &extra[nextra];
            inits[g->n_initializer + nextra++] = t;
            onnx__tensor_proto__init(t);
            t->name = (char *)ti->name;
            t->n_dims = src->n_dims;
            t->dims = src->dims;
            t->has_data_type = 1;
            t->data_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
        }
        t->has_raw_data = 1;
        t->raw_data.data = (uint8_t *)((ti->is_buffer ? m->buffers : m->params) + ti->offset);
        t->raw_data.len = ti->count * sizeof(float);
        t->n_float_data = 0;
    }
    if (nextra) {
        memcpy(inits, g->initializer, g->n_initializer * sizeof *inits);
        g->initializer = inits;
        g->n_initializer += nextra;
    }
    return 0;
}

/* The inference form: a training-form batch norm keeps its first output and loses
 * training_mode; a Dropout is an Identity of its first input. attrs holds, per node, the
 * attribute array that leaves training_mode out (NULL when the node keeps its own). */
static int inference_form(Onnx__GraphProto *g, Onnx__AttributeProto ***attrs)
{
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        if (!n->op_type) continue;
        if (strcmp(n->op_type, "BatchNormalization") == 0) {
            if (n->n_output > 1) n->n_output = 1;
            size_t keep = 0;
            for (size_t a = 0; a < n->n_attribute; a++)
                if (!n->attribute[a]->name || strcmp(n->attribute[a]->name, "training_mode") != 0) keep++;
            if (keep == n->n_attribute) continue;
            attrs[i] = malloc((keep ? keep : 1) * sizeof **attrs);
            if (!attrs[i]) return -1;
            keep = 0;
            for (size_t a = 0; a < n->n_attribute; a++)
                if (!n->attribute[a]->name || strcmp(n->attribute[a]->name, "training_mode") != 0)
                    attrs[i][keep++] = n->attribute[a];
            n->attribute = attrs[i];
            n->n_attribute = keep;
        } else if (strcmp(n->op_type, "Dropout") == 0) {
            n->op_type = (char *)"Identity";
            if (n->n_input > 1) n->n_input = 1;
            if (n->n_output > 1) n->n_output = 1;
            n->n_attribute = 0;
        }
    }
    return 0;
}

/* Whether a node or the graph's output reads value name. */
static int value_used(const Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (g->node[i]->input[k] && strcmp(g->node[i]->input[k], name) == 0) return 1;
    for (size_t i = 0; i < g->n_output; i++)
        if (g->output[i]->name && strcmp(g->output[i]->name, name) == 0) return 1;
    return 0;
}

static int is_initializer(const Onnx__GraphProto *g, const char *name)
{
    for (size_t k = 0; k < g->n_initializer; k++)
        if (g->initializer[k]->name && strcmp(g->initializer[k]->name, name) == 0) return 1;
    return 0;
}

/* The nodes into kept, less the Constants nothing reads any more (a Dropout's ratio and
 * training_mode once it is an Identity), which runtimes warn about, and the Identity or
 * Constant nodes that defined a name put_weights made an initializer of; returns their
 * count. */
static size_t live_nodes(const Onnx__GraphProto *g, Onnx__NodeProto **kept)
{
    size_t n = 0;
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *node = g->node[i];
        int one = node->op_type && node->n_output == 1 && node->output[0];
        int constant = one && strcmp(node->op_type, "Constant") == 0;
        int dead = constant && !value_used(g, node->output[0]);
        if ((constant || (one && strcmp(node->op_type, "Identity") == 0)) && is_initializer(g, node->output[0]))
            dead = 1;
        if (!dead) kept[n++] = node;
    }
    return n;
}

int onnx_export_buffer(const uint8_t *src, size_t len, const model_t *m, uint8_t **out, size_t *outlen, char *err,
                       size_t errlen)
{
    *out = NULL;
    *outlen = 0;
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, src);
    if (!mp || !mp->graph) {
        if (mp) onnx__model_proto__free_unpacked(mp, NULL);
        return snprintf(err, errlen, "onnx: the source is not an ONNX model with a graph"), -1;
    }
    Onnx__GraphProto *g = mp->graph;
    int rc = -1;
    saved_tensor_t *saved = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *saved);
    Onnx__NodeProto *nodes = malloc((g->n_node ? g->n_node : 1) * sizeof *nodes);
    Onnx__AttributeProto ***attrs = calloc(g->n_node ? g->n_node : 1, sizeof *attrs);
    Onnx__NodeProto **kept = malloc((g->n_node ? g->n_node : 1) * sizeof *kept);
    Onnx__TensorProto *extra = calloc((size_t)(m->ntensors ? m->ntensors : 1), sizeof *extra);
    Onnx__TensorProto **inits = malloc((g->n_initializer + (size_t)m->ntensors + 1) * sizeof *inits);
    Onnx__TensorProto **own_inits = g->initializer;
    size_t own_ninit = g->n_initializer;
    if (!saved || !nodes || !attrs || !kept || !extra || !inits) {
        snprintf(err, errlen, "onnx: out of memory");
        goto out;
    }
    for (size_t i = 0; i < g->n_node; i++) nodes[i] = *g->node[i];
    if (inference_form(g, attrs) != 0) {
        snprintf(err, errlen, "onnx: out of memory");
        goto restore;
    }
    if (put_weights(g, m, saved, extra, inits, err, errlen) != 0) goto restore;
    Onnx__NodeProto **all = g->node;
    size_t nall = g->n_node, n;
    g->n_node = live_nodes(g, kept);
    g->node = kept;
    n = onnx__model_proto__get_packed_size(mp);
    *out = malloc(n ? n : 1);
    if (*out) *outlen = onnx__model_proto__pack(mp, *out);
    else snprintf(err, errlen, "onnx: out of memory (%zu bytes)", n);
    g->node = all;
    g->n_node = nall;
    rc = *out ? 0 : -1;
restore:
    g->initializer = own_inits;
    g->n_initializer = own_ninit;
    for (int i = 0; i < m->ntensors; i++) {
        if (!saved[i].t) continue;
        saved[i].t->has_raw_data = saved[i].has_raw_data;
        saved[i].t->raw_data = saved[i].raw_data;
        saved[i].t->n_float_data = saved[i].n_float_data;
    }
    for (size_t i = 0; i < g->n_node; i++) {
        *g->node[i] = nodes[i];
        free(attrs[i]);
    }
out:
    free(extra);
    free(inits);
    free(kept);
    free(saved);
    free(nodes);
    free(attrs);
    onnx__model_proto__free_unpacked(mp, NULL);
    return rc;
}

int onnx_export_file(const char *src_path, const model_t *m, const char *out_path, char *err, size_t errlen)
{
    uint8_t *src;
    size_t len;
    if (onnx_read_file(src_path, &src, &len, err, errlen) != 0) return -1;
    int rc = onnx_export_to_file(src, len, m, out_path, err, errlen);
    free(src);
    return rc;
}

int onnx_export_to_file(const uint8_t *src, size_t len, const model_t *m, const char *out_path, char *err, size_t errlen)
{
    uint8_t *dst;
    size_t n;
    int rc = onnx_export_buffer(src, len, m, &dst, &n, err, errlen);
    if (rc != 0) return -1;
    /* whole or not at all: a temporary file beside it, renamed over it */
    char tmp[4200];
    int fd = fs_atomic_begin(out_path, tmp, sizeof tmp, 0644);
    const uint8_t *p = dst;
    size_t left = n;
    while (fd >= 0 && left > 0) {
        ssize_t k = write(fd, p, left);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        p += k;
        left -= (size_t)k;
    }
    if (fd < 0 || left > 0 || fs_atomic_commit(fd, tmp, out_path) != 0) {
        snprintf(err, errlen, "onnx: cannot write %s: %s", out_path, strerror(errno));
        if (fd >= 0 && left > 0) fs_atomic_abort(fd, tmp);
        rc = -1;
    }
    free(dst);
    return rc;
}
