/* bench/dsload_speed.c - how fast a user's data set is decoded into the cache, and mapped
 * from it afterwards (worker/dsload.h): images per second.
 *
 *   dsload_speed FORMAT PATH C H W RESIZE RUNS SCRATCH
 *
 * Each run decodes PATH (imagefolder or npz) into a fresh cache directory under SCRATCH
 * (decode, convert, resize, write, map: what the first job on a host pays), then maps the
 * cache it wrote again (what every later job and rank pays), then decodes once more into
 * memory (no cache file). Prints one JSON line with the medians of RUNS runs:
 * {"images", "build_s", "build_images_per_s", "map_s", "map_images_per_s",
 *  "memory_s", "memory_images_per_s", "cache_bytes"}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dsload.h"
#include "fs.h"
#include "median.h"

#define MAX_RUNS 32

static double load(const dsload_opts_t *o, long *images, long *bytes)
{
    dataset_t tr, te;
    dsload_info_t info;
    char err[1024];
    double t0 = clock_mono_s();
    if (dsload_user(o, &tr, &te, &info, err, sizeof err) != DATA_OK) {
        fprintf(stderr, "dsload_speed: %s\n", err);
        exit(1);
    }
    double t = clock_mono_s() - t0;
    *images = (long)tr.n + te.n;
    *bytes = info.cache_bytes;
    dataset_free(&tr);
    dataset_free(&te);
    return t;
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: dsload_speed FORMAT PATH C H W RESIZE RUNS SCRATCH\n");
        return 2;
    }
    catalog_format_t format;
    if (catalog_format_parse(argv[1], &format) != 0 || !catalog_format_is_user(format)) {
        fprintf(stderr, "dsload_speed: FORMAT must be imagefolder or npz, not %s\n", argv[1]);
        return 2;
    }
    int runs = atoi(argv[7]);
    if (runs < 1 || runs > MAX_RUNS) runs = 3;
    double build[MAX_RUNS], map[MAX_RUNS], mem[MAX_RUNS];
    long images = 0, bytes = 0;
    for (int r = 0; r < runs; r++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/cache%d", argv[8], r);
        fs_remove_tree(dir);
        dsload_opts_t o = {format, argv[2], "nhwc", atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]),
                           dir,    0,       0};
        build[r] = load(&o, &images, &bytes);
        map[r] = load(&o, &images, &bytes);
        o.cache_dir = NULL;
        long ignored;
        mem[r] = load(&o, &images, &ignored);
        fs_remove_tree(dir);
    }
    double b = bench_median(build, runs), m = bench_median(map, runs), e = bench_median(mem, runs);
    printf("{\"images\": %ld, \"runs\": %d, \"build_s\": %.4f, \"build_images_per_s\": %.0f, \"map_s\": %.5f, "
           "\"map_images_per_s\": %.0f, \"memory_s\": %.4f, \"memory_images_per_s\": %.0f, \"cache_bytes\": %ld}\n",
           images, runs, b, images / b, m, images / m, e, images / e, bytes);
    return 0;
}
