/* coordinator/models.c - the catalog (common/catalog.h) through the API: its models and
 * data sets as JSON (GET /api/v1/models, /api/v1/models/{name}, /api/v1/datasets), and
 * where this machine has each data set's files. Nothing here is stored in Redis: the
 * catalog is the process's own; GET /api/v1/datasets first brings its users' entries in
 * step with the data roots (coordinator/userdata.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "clog.h"
#include "dataroots.h"
#include "coord_internal.h"
#include "memest.h"
#include "userdata.h"

/* {"channels", "height", "width"}: the shape of one image, as the API spells it. */
static json_t *shape_json(int C, int H, int W)
{
    return json_pack("{s:i, s:i, s:i}", "channels", C, "height", H, "width", W);
}

static json_t *model_json(const catalog_model_t *m)
{
    double model_bytes, per_sample;
    memest_model(m, &model_bytes, &per_sample);
    json_t *j = json_pack("{s:s, s:s, s:s, s:o, s:i, s:i, s:I, s:I, s:f, s:{s:f, s:f}}", "name", m->name, "title",
                          m->title[0] ? m->title : m->name, "source", catalog_source_name(m->source), "input",
                          shape_json(m->C, m->H, m->W), "classes", m->classes, "layers", m->layers, "parameters",
                          (json_int_t)m->params, "buffers", (json_int_t)m->buffers, "flops_per_sample",
                          m->flops_per_sample, "memory", "model_bytes", model_bytes, "bytes_per_sample", per_sample);
    /* The data set it is trained on by default, or null: never a made-up one. */
    if (j) json_object_set_new(j, "dataset", m->dataset[0] ? json_string(m->dataset) : json_null());
    /* A built-in's figures are for `classes` (10); its head takes the job's data set's
     * classes, and per_class says what each class more adds (one more class's figures
     * less these: the estimate's own arithmetic). null for a model of its own width. */
    catalog_model_t more;
    if (j && m->head_in > 0 && m->classes < CATALOG_CLASSES_MAX &&
        catalog_model_for_classes(m, m->classes + 1, &more, NULL, 0) == 0) {
        double more_bytes, more_per_sample;
        memest_model(&more, &more_bytes, &more_per_sample);
        json_object_set_new(j, "per_class",
                            json_pack("{s:I, s:f, s:{s:f, s:f}}", "parameters", (json_int_t)(more.params - m->params),
                                      "flops_per_sample", more.flops_per_sample - m->flops_per_sample, "memory",
                                      "model_bytes", more_bytes - model_bytes, "bytes_per_sample",
                                      more_per_sample - per_sample));
    } else if (j) json_object_set_new(j, "per_class", json_null());
    if (j) json_object_set_new(j, "classes_from_dataset", json_boolean(m->head_in > 0));
    /* an uploaded model's content hash (PUT /api/v1/models/{name}), else null */
    if (j) json_object_set_new(j, "sha256", m->sha256[0] ? json_string(m->sha256) : json_null());
    return j;
}

int coord_models(coordinator_t *c, json_t **out)
{
    (void)c;
    json_t *list = json_array();
    catalog_model_t m;
    for (size_t i = 0; list && catalog_model_at(i, &m) == 0; i++) {
        if (json_array_append_new(list, model_json(&m)) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    *out = list ? json_pack("{s:o}", "models", list) : NULL;
    return *out ? COORD_OK : COORD_EINTERNAL;
}

int coord_model(coordinator_t *c, const char *name, json_t **out)
{
    (void)c;
    catalog_model_t m;
    *out = NULL;
    if (!name || catalog_model_get(name, &m) != 0) return COORD_ENOTFOUND;
    *out = model_json(&m);
    return *out ? COORD_OK : COORD_EINTERNAL;
}

/* Where this machine has d's files (catalog_dataset_locate over the daemon's data roots:
 * the rule a submission and a retry use too, coordinator/api.c); "" when nowhere. */
static void dataset_found(const coordinator_t *c, const catalog_dataset_t *d, char *path, size_t len)
{
    const char *roots[COORD_DATA_ROOTS_MAX];
    int nroots = coord_data_roots_get(c, roots);
    catalog_dataset_locate(d, roots, nroots, path, len, NULL, 0);
}

static json_t *dataset_json(const coordinator_t *c, const catalog_dataset_t *d)
{
    char def[PATH_MAX], found[PATH_MAX];
    if (catalog_dataset_default_dir(d, def, sizeof def) != 0) def[0] = '\0';
    dataset_found(c, d, found, sizeof found);
    /* an image folder's image size is known only once decoded: null, never 0x0x0 */
    json_t *input = d->C > 0 ? shape_json(d->C, d->H, d->W) : json_null();
    json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:o, s:i, s:I, s:I, s:b, s:s, s:b}", "name", d->name, "title",
                          d->title[0] ? d->title : d->name, "source", catalog_source_name(d->source), "format",
                          catalog_format_name(d->format), "input", input, "classes", d->classes, "train_samples",
                          (json_int_t)d->train_n, "test_samples", (json_int_t)d->test_n, "augment", d->augment,
                          "default_path", def, "present", found[0] != '\0');
    if (j) json_object_set_new(j, "path", found[0] ? json_string(found) : json_null());
    return j;
}

void coord_userdata_sync(coordinator_t *c, json_t *refused)
{
    const char *roots_v[COORD_DATA_ROOTS_MAX];
    int probed;
    /* a default root created since the start counts from the first listing or submission */
    coord_data_roots_refresh(c);
    int nroots = coord_data_roots_get(c, roots_v);
    int n = userdata_refresh(roots_v, nroots, refused, &probed);
    /* the daemon's log; a command-line client (pacer submit) says nothing of it */
    if (probed && c->daemon) clog_printf("data roots probed: %d data set%s", n, n == 1 ? "" : "s");
}

int coord_datasets(coordinator_t *c, json_t **out)
{
    json_t *refused = json_array();
    if (refused) coord_userdata_sync(c, refused);
    json_t *list = json_array();
    catalog_dataset_t d;
    for (size_t i = 0; list && catalog_dataset_at(i, &d) == 0; i++) {
        if (json_array_append_new(list, dataset_json(c, &d)) != 0) {
            json_decref(list);
            list = NULL;
        }
    }
    json_t *roots = json_array();
    const char *roots_v[COORD_DATA_ROOTS_MAX];
    int nroots = coord_data_roots_get(c, roots_v);
    for (int i = 0; roots && i < nroots; i++) json_array_append_new(roots, json_string(roots_v[i]));
    *out = NULL;
    if (!list || !roots || !refused) {
        json_decref(list);
        json_decref(roots);
        json_decref(refused);
        return COORD_EINTERNAL;
    }
    /* json_pack takes all three, on failure too */
    *out = json_pack("{s:o, s:o, s:o}", "datasets", list, "data_roots", roots, "refused", refused);
    return *out ? COORD_OK : COORD_EINTERNAL;
}
