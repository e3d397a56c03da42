/* fuzz/fuzz_modelindex.c - libFuzzer target for the coordinator's index of uploaded models
 * (STATE_DIR/models/index.json, coordinator/modelstore.h: modelstore_index_parse), read at
 * every start. Build and run: make fuzz-modelindex.
 *
 * Properties: any bytes give a count in [-1, max] and never a crash, leak or overread;
 * every entry of an accepted index is one catalog_model_add takes (the parser's checks
 * are at least the catalog's), under a name and hash of the catalog's rules.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "modelstore.h"
#include "sha256.h"

#define MAX 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static catalog_model_t out[MAX];
    char err[512];
    int n = modelstore_index_parse((const char *)data, size, out, MAX, err, sizeof err);
    if (n < -1 || n > MAX) abort();
    if (n < 0 && !err[0]) abort(); /* a refusal says why */
    for (int i = 0; i < n; i++) {
        if (!catalog_name_valid(out[i].name) || !sha256_hex_valid(out[i].sha256)) abort();
        if (out[i].source != CATALOG_UPLOADED) abort();
        /* the name may be a built-in's: the catalog refuses those, which start logs */
        if (catalog_model_add(&out[i], err, sizeof err) != 0) {
            catalog_model_t b;
            if (catalog_model_get(out[i].name, &b) != 0) {
                fprintf(stderr, "accepted entry %s refused by the catalog: %s\n", out[i].name, err);
                abort();
            }
            continue;
        }
        catalog_model_remove(out[i].name);
    }
    return 0;
}
