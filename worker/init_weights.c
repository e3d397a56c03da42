/* worker/init_weights.c - see init_weights.h. */
#include "init_weights.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "checkpoint.h"
#include "dataroot.h"
#include "evalsample.h"
#include "freeze.h"
#include "lora.h"
#include "onnx_import.h"
#include "modelfetch.h"
#include "safetensors.h"
#include "st_export.h"
#include "st_gpt2.h"

/* The file at path mapped read-only (under the data roots, when set). 0, or -1 with err. */
static int map_file(const char *path, int job, const uint8_t **data, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return snprintf(err, errlen, "init.safetensors: %s: %s", path, strerror(errno)), -1;
    struct stat st;
    /* init.job's file is the coordinator's own (its job directory), which it resolved */
    if (!job && dataroot_check_fd(fd, path, err, errlen) != 0) {
        close(fd);
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) {
        close(fd);
        return snprintf(err, errlen, "init.safetensors: %s: not a non-empty regular file", path), -1;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return snprintf(err, errlen, "init.safetensors: %s: %s", path, strerror(errno)), -1;
    *data = p;
    *len = (size_t)st.st_size;
    return 0;
}

static int same_shape(const st_tensor_t *a, const st_tensor_t *b)
{
    return a->rank == b->rank && memcmp(a->dims, b->dims, (size_t)a->rank * sizeof a->dims[0]) == 0;
}

static void shape_text(const st_tensor_t *t, char *out, size_t len)
{
    size_t at = (size_t)snprintf(out, len, "[");
    for (int d = 0; d < t->rank && at < len; d++)
        at += (size_t)snprintf(out + at, len - at, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
    if (at < len) snprintf(out + at, len - at, "]");
}

/* The file's tensors into the model's (mine, n): each matched by name and shape copied, the
 * others listed in the report. With strict, the first one unmatched refuses (nothing is
 * copied then). 0, or -1 with err. */
static int match(const st_file_t *f, const st_tensor_t *mine, int n, int strict, const char *path, json_t *rep,
                 char *err, size_t errlen)
{
    json_t *missing = json_object_get(rep, "missing"), *unexpected = json_object_get(rep, "unexpected"),
           *mismatched = json_object_get(rep, "mismatched");
    for (int i = 0; i < n; i++) {
        int j = st_find(f, mine[i].name);
        if (j < 0) json_array_append_new(missing, json_string(mine[i].name));
        else if (!same_shape(&f->tensors[j], &mine[i])) json_array_append_new(mismatched, json_string(mine[i].name));
        if (!strict || (j >= 0 && same_shape(&f->tensors[j], &mine[i]))) continue;
        if (j < 0)
            return snprintf(err, errlen,
                            "init.safetensors: %s has no tensor '%s' of the model (init.strict false loads "
                            "what matches)",
                            path, mine[i].name),
                   -1;
        char a[160], b[160];
        shape_text(&f->tensors[j], a, sizeof a);
        shape_text(&mine[i], b, sizeof b);
        return snprintf(err, errlen, "init.safetensors: %s: tensor '%s' is %s there, the model's is %s", path,
                        mine[i].name, a, b),
               -1;
    }
    for (int j = 0; j < f->n; j++) {
        int found = 0;
        for (int i = 0; i < n && !found; i++) found = strcmp(mine[i].name, f->tensors[j].name) == 0;
        if (found) continue;
        if (strict)
            return snprintf(err, errlen,
                            "init.safetensors: %s: tensor '%s' is not the model's (init.strict false leaves it out)",
                            path, f->tensors[j].name),
                   -1;
        json_array_append_new(unexpected, json_string(f->tensors[j].name));
    }
    int loaded = 0;
    for (int i = 0; i < n; i++) {
        int j = st_find(f, mine[i].name);
        if (j < 0 || !same_shape(&f->tensors[j], &mine[i])) continue;
        st_read_floats(f, j, (float *)mine[i].data); /* data points into the model's own buffers */
        loaded++;
    }
    json_object_set_new(rep, "loaded", json_integer(loaded));
    return 0;
}

static int from_safetensors(model_t *model, const job_spec_t *s, const char *path, json_t *rep, char *err, size_t errlen)
{
    const uint8_t *src = NULL;
    size_t srclen = 0;
    uint8_t *own = NULL;
    if (s->model_sha256[0] && modelfetch_bytes(s->model_onnx, s->model_sha256, &src, &srclen, err, errlen) != 0)
        return -1;
    if (!s->model_sha256[0] && s->model_onnx[0]) {
        if (onnx_read_file(s->model_onnx, &own, &srclen, err, errlen) != 0) return -1;
        src = own;
    }
    st_tensor_t *mine = NULL;
    int n = 0, rc = st_model_tensors(src, srclen, model, &mine, &n, err, errlen);
    free(own);
    if (rc != 0) return -1;
    const uint8_t *data = NULL;
    size_t len = 0;
    st_file_t f;
    rc = map_file(path, s->init.job[0] != 0, &data, &len, err, errlen);
    if (rc == 0) {
        char why[512];
        rc = st_parse(data, len, &f, why, sizeof why);
        /* Hugging Face GPT-2's names and Conv1D layout read as the built-in GPT's */
        int hf = rc == 0 ? st_from_hf(&f, why, sizeof why) : 0;
        if (hf < 0) st_free(&f), rc = -1;
        if (rc != 0) snprintf(err, errlen, "init.safetensors: %s: %s", path, why);
        if (hf > 0) json_object_set_new(rep, "names", json_string("hf"));
    }
    if (rc == 0) {
        rc = match(&f, mine, n, s->init.strict, path, rep, err, errlen);
        st_free(&f);
    }
    if (data) munmap((void *)data, len);
    free(mine);
    return rc;
}

static int from_checkpoint(model_t *m, const char *path, json_t *rep, char *err, size_t errlen)
{
    ckpt_state_t st;
    /* no expectations of the run: only the model's (name, counts, layout) are checked */
    if (checkpoint_load(path, m, NULL, &st, err, errlen) != 0) return -1;
    /* without expectations checkpoint_parse leaves the values unchecked: a diverged run's
     * weights are no start */
    for (size_t i = 0; i < m->nparams; i++)
        if (!isfinite(m->params[i])) {
            const tensor_info_t *t = model_tensor_at(m, i, 0);
            return snprintf(err, errlen, "init.checkpoint: %s: tensor '%s' holds %g", path, t ? t->name : "?",
                            (double)m->params[i]),
                   -1;
        }
    json_object_set_new(rep, "loaded", json_integer(m->ntensors));
    return 0;
}

int worker_init_weights(worker_t *w, json_t **report, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    *report = NULL;
    const char *ck = s->init.checkpoint, *st = s->init.safetensors;
    if (!ck[0] && !st[0] && !s->init.job[0]) return 0;
    if (ck[0] && st[0])
        return snprintf(err, errlen, "init: checkpoint and safetensors both given; at most one source"), -1;
    if (ck[0] && s->init.job[0])
        return snprintf(err, errlen, "init: checkpoint and job both given; at most one source"), -1;
    /* the coordinator resolves init.job into its file (init.safetensors) at submission */
    if (!ck[0] && !st[0])
        return snprintf(err, errlen,
                        "init.job %s: a coordinator's job, which pacer-worker on its own cannot "
                        "read; give init.safetensors (its --export-safetensors file) or init.checkpoint",
                        s->init.job),
               -1;
    json_t *rep = json_pack("{s:s, s:i, s:[], s:[], s:[]}", "source", ck[0] ? ck : st, "loaded", 0, "missing",
                            "unexpected", "mismatched");
    if (!rep) return snprintf(err, errlen, "init: out of memory"), -1;
    if (s->init.job[0]) json_object_set_new(rep, "job", json_string(s->init.job));
    /* with lora the source holds the model without adapters: loaded into that graph, then
     * its weights into the model's (the adapters keep their initialisation) */
    model_t *into = w->model;
    int rc = w->model->lora ? model_lora_base(w->model, 1, 0, &into, err, errlen) : 0;
    if (rc == 0)
        rc = ck[0] ? from_checkpoint(into, ck, rep, err, errlen) : from_safetensors(into, s, st, rep, err, errlen);
    if (into != w->model) {
        if (rc == 0) model_lora_set_base(w->model, into);
        model_free(into);
    }
    if (rc == 0) {
        model_zero_state(w->model); /* the source's optimizer state is not taken */
        if (w->gpu && cuda_model_upload(w->gpu, w->model) != 0) {
            snprintf(err, errlen, "CUDA: %s", cuda_model_error(w->gpu));
            rc = -1;
        }
    }
    if (rc != 0) {
        json_decref(rep);
        return -1;
    }
    *report = rep;
    return 0;
}

int worker_apply_freeze(worker_t *w, char *err, size_t errlen)
{
    model_t *m = w->model;
    const char *list = w->spec->freeze;
    char g[FREEZE_GLOB_MAX];
    size_t at = 0;
    while (freeze_next(list, &at, g)) {
        int hit = 0;
        for (int i = 0; i < m->ntensors && !hit; i++)
            hit = !m->tensors[i].is_buffer && freeze_matches(g, m->tensors[i].name); /* g: one glob */
        if (!hit) return snprintf(err, errlen, "freeze: '%s' matches no parameter tensor of the model", g), -1;
    }
    w->trainable_params = w->frozen_params = 0;
    w->any_frozen = 0;
    for (int i = 0; i < m->ntensors; i++) {
        tensor_info_t *t = &m->tensors[i];
        if (t->is_buffer) continue;
        /* with lora only the adapters train */
        t->no_update = (list[0] && freeze_matches(list, t->name)) || (m->lora && !model_lora_is_adapter(m, i));
        if (t->no_update) w->frozen_params += (long long)t->count;
        else w->trainable_params += (long long)t->count;
        w->any_frozen |= t->no_update;
    }
    model_zero_frozen_grads(m); /* the backward never writes them from here on */
    return 0;
}

void worker_zero_frozen_grads(worker_t *w)
{
    if (!w->any_frozen || !w->gpu) return;
    const model_t *m = w->model;
    for (int i = 0; i < m->ntensors; i++)
        if (m->tensors[i].no_update) memset(m->grads + m->tensors[i].offset, 0, m->tensors[i].count * sizeof(float));
}

int worker_apply_lora(worker_t *w, char *err, size_t errlen)
{
    const job_spec_t *s = w->spec;
    const lora_opts_t o = {.rank = s->lora.rank,
                           .alpha = (float)s->lora.alpha,
                           .dropout = (float)s->lora.dropout,
                           .targets = s->lora.targets};
    model_t *m;
    if (model_lora_apply(w->model, &o, &m, err, errlen) != 0) return -1;
    model_lora_init(m, (uint64_t)s->seed);
    model_free(w->model);
    w->model = m;
    if (!w->eval_sample) return 0;
    /* the sample runs the graph without adapters, on the merged weights (as exports do) */
    char why[512];
    if (model_lora_base(m, 1, 1, &w->lora_sample, err, errlen) != 0) return -1;
    if (evalsample_rebind(w->eval_sample, w->lora_sample, why, sizeof why) != 0)
        return snprintf(err, errlen, "eval_sample: %s", why), -1;
    return 0;
}

int worker_export_model(const worker_t *w, int merge, model_t **out, char *err, size_t errlen)
{
    *out = w->model;
    return w->model->lora ? model_lora_base(w->model, 1, merge, out, err, errlen) : 0;
}

int worker_export_separate(const worker_t *w, const model_t *base, const uint8_t *src, size_t len, const char *path,
                           char *err, size_t errlen)
{
    const model_t *m = w->model;
    const model_lora_t *l = m->lora;
    st_tensor_t *mine = NULL;
    int n = 0;
    if (st_model_tensors(src, len, base, &mine, &n, err, errlen) != 0) return -1;
    st_tensor_t *t = realloc(mine, (size_t)(n + 2 * l->n) * sizeof *t);
    if (!t) {
        free(mine);
        return snprintf(err, errlen, "safetensors: out of memory"), -1;
    }
    int rc = 0;
    for (int k = 0; k < l->n && rc == 0; k++) {
        const lora_adapter_t *a = &l->ad[k];
        const int which[2] = {a->a, a->b};
        for (int j = 0; j < 2 && rc == 0; j++) {
            st_tensor_t *x = &t[n++];
            const tensor_info_t *ti = &m->tensors[which[j]];
            memset(x, 0, sizeof *x);
            x->rank = 2; /* A (rank, IN), B (OUT, rank): torch's Linear weights */
            x->dims[0] = j ? a->out : l->rank;
            x->dims[1] = j ? l->rank : a->in;
            x->count = ti->count;
            x->data = m->params + ti->offset;
            if (model_lora_peft_name(m, which[j], x->name, sizeof x->name) != 0) {
                snprintf(err, errlen, "safetensors: the PEFT name of '%s' is too long", ti->name);
                rc = -1;
            }
        }
    }
    if (rc == 0) rc = st_write_file(path, t, n, err, errlen);
    free(t);
    return rc;
}
