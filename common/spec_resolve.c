/* common/spec_resolve.c - see spec_resolve.h. */
#include "spec_resolve.h"

#include <stdio.h>
#include <string.h>

#include "catalog.h"

static spec_onnx_loader_fn onnx_loader;

void spec_set_onnx_loader(spec_onnx_loader_fn fn) { onnx_loader = fn; }

void spec_onnx_name(const char *path, char *out, size_t len)
{
    if (len == 0) return;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (!*base) base = "model.onnx";
    size_t n = 0;
    for (; base[n] && n + 1 < len && n + 1 < SPEC_NAME_MAX; n++) {
        unsigned char c = (unsigned char)base[n];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                 c == '-';
        out[n] = ok ? (char)c : '_';
    }
    out[n] = '\0';
    /* a '.' keeps the name apart from the built-in ones, which have none */
    if (!memchr(out, '.', n)) {
        size_t room = len < SPEC_NAME_MAX ? len : SPEC_NAME_MAX;
        if (n + sizeof ".onnx" > room) n = room > sizeof ".onnx" ? room - sizeof ".onnx" : 0;
        snprintf(out + n, len - n, ".onnx");
    }
}

/* "model": {"onnx": PATH}: the model is the catalog's entry named after the file, added
 * by the loader (the worker's and pacer-sim's onnx_import_catalog_add) unless the process
 * has it already (pacer-sim's ranks share one catalog). "model": {"onnx": NAME} naming an
 * uploaded model (the coordinator's catalog has it, source uploaded): that entry, its
 * sha256 copied into model.sha256; with a sha256 (what the coordinator launches) the
 * model keeps NAME and the loader finds the bytes by the hash. Runs before the pairing
 * checks, so they read the imported model's figures. */
int spec_resolve_model(errbuf_t *e, job_spec_t *s)
{
    if (s->gpt.layers > 0 && s->model_onnx[0]) return spec_fail(e, "model: give onnx or gpt, not both");
    if (s->gpt.layers > 0) {
        snprintf(s->model, sizeof s->model, "gpt");
        return 0;
    }
    if (!s->model_onnx[0]) {
        if (s->model_sha256[0]) return spec_fail(e, "model.sha256: only with model.onnx (an uploaded model's name)");
        /* an object with neither onnx nor a gpt's layers */
        if (!s->model[0])
            return spec_fail(e, "model.gpt.layers: required in a gpt object (1 to 96 transformer blocks)");
        return 0;
    }
    catalog_model_t m;
    /* a catalog name holds no '/': never a path */
    const int bare = catalog_name_valid(s->model_onnx);
    if (bare && catalog_model_get(s->model_onnx, &m) == 0 && m.source == CATALOG_UPLOADED) {
        if (s->model_sha256[0] && strcmp(s->model_sha256, m.sha256) != 0)
            return spec_fail(e, "model.sha256: uploaded model %s is %.12s... now, not %.12s... (replaced since)",
                             s->model_onnx, m.sha256, s->model_sha256);
        snprintf(s->model, sizeof s->model, "%.*s", (int)sizeof s->model - 1, s->model_onnx);
        snprintf(s->model_sha256, sizeof s->model_sha256, "%s", m.sha256);
        return 0;
    }
    if (s->model_sha256[0]) {
        if (!bare)
            return spec_fail(e,
                             "model.onnx: with model.sha256, the name of an uploaded model (letters, digits, '.', '_', "
                             "'-'), not a path");
        snprintf(s->model, sizeof s->model, "%.*s", (int)sizeof s->model - 1, s->model_onnx);
    } else {
        spec_onnx_name(s->model_onnx, s->model, sizeof s->model);
    }
    if (catalog_model_get(s->model, &m) == 0) {
        /* an upload never takes a built-in's name: a hand-written spec must not train
         * ONNX bytes under a built-in's figures */
        if (s->model_sha256[0] && m.source != CATALOG_UPLOADED)
            return spec_fail(e, "model.onnx: %s is a %s model, not an uploaded one", s->model,
                             catalog_source_name(m.source));
        return 0;
    }
    if (!onnx_loader) {
        if (bare)
            return spec_fail(e,
                             "model.onnx: %s is not an uploaded model (GET /api/v1/models lists them; PUT "
                             "/api/v1/models/%s uploads one); ONNX files by path are read by pacer-worker and pacer-sim",
                             s->model_onnx, s->model_onnx);
        return spec_fail(e,
                         "model.onnx: %s: ONNX files are read by pacer-worker and pacer-sim; %s is not in this catalog",
                         s->model_onnx, s->model);
    }
    char why[768];
    if (onnx_loader(s->model_onnx, s->model, s->model_sha256, why, sizeof why) != 0)
        return spec_fail(e, "model.onnx: %s", why);
    return 0;
}

/* "dataset": {"name": NAME} of a user's data set (an image folder or .npz that a data
 * root holds, put in the catalog by common/userdata.h: GET /api/v1/datasets lists it) is
 * read from where the catalog found it, in its format: format and path are filled in
 * here, so that the coordinator checks the path against its data roots, stores the
 * spec with both and its workers read the path, as for a spec that gave them. A name
 * that is not in this process's catalog is still a valid label of a user's set given by
 * format and path (a worker without --data-root reading the coordinator's spec);
 * otherwise it gets the catalog's names. */
int spec_resolve_dataset(errbuf_t *e, job_spec_t *s)
{
    catalog_dataset_t d;
    if (catalog_dataset_get(s->dataset.name, &d) != 0) {
        if (spec_dataset_is_user(s) && s->dataset.path[0]) return 0;
        char list[512];
        catalog_dataset_names(list, sizeof list, "", 0);
        return spec_fail(e, "dataset.name: must be one of %s", list);
    }
    if (!catalog_format_is_user(d.format)) return 0;
    const char *f = catalog_format_name(d.format);
    catalog_format_t given;
    if (catalog_format_parse(s->dataset.format, &given) == 0 && given != d.format) /* "auto" is none */
        return spec_fail(e, "dataset.format: %s is not the format of dataset.name %s (%s)", s->dataset.format,
                         s->dataset.name, f);
    if (s->dataset.path[0] && strcmp(s->dataset.path, d.fixed_dir) != 0)
        return spec_fail(e, "dataset.path: %s is not where dataset.name %s is (%s): give one or the other",
                         s->dataset.path, s->dataset.name, d.fixed_dir);
    if (strlen(d.fixed_dir) >= sizeof s->dataset.path)
        return spec_fail(e, "dataset.name: %s: its path is too long for dataset.path", s->dataset.name);
    snprintf(s->dataset.format, sizeof s->dataset.format, "%s", f);
    snprintf(s->dataset.path, sizeof s->dataset.path, "%s", d.fixed_dir);
    return 0;
}

/* "tokenizer": {"kind": "bpe", ...}: the object form names GPT-2's BPE and its files (either
 * vocab.json and merges.txt, or one tokenizer.json); the row's own value becomes "bpe". */
int spec_resolve_tokenizer(errbuf_t *e, job_spec_t *s)
{
    const int vocab = s->dataset.tokenizer_vocab[0] != 0, merges = s->dataset.tokenizer_merges[0] != 0,
              file = s->dataset.tokenizer_file[0] != 0;
    if (!s->dataset.tokenizer_kind[0] && !vocab && !merges && !file) return 0;
    if (!s->dataset.tokenizer_kind[0])
        return spec_fail(e, "dataset.tokenizer.kind: required in a tokenizer object: \"bpe\" (bytes and chars are "
                            "given as strings)");
    if (file && (vocab || merges))
        return spec_fail(e, "dataset.tokenizer.file: give a tokenizer.json or vocab and merges, not both");
    if (!file && !(vocab && merges))
        return spec_fail(e,
                         "dataset.tokenizer.%s: required with %s (GPT-2's vocab.json and merges.txt), or give file "
                         "(a tokenizer.json)",
                         vocab ? "merges" : "vocab",
                         vocab    ? "vocab"
                         : merges ? "merges"
                                  : "kind bpe");
    snprintf(s->dataset.tokenizer, sizeof s->dataset.tokenizer, "%s", s->dataset.tokenizer_kind);
    return 0;
}
