/* fuzz/fuzz_history.c - libFuzzer target for the dashboard's downsampled history
 * (coordinator/jobhistory.h): history_add takes the metrics records of a job's streams,
 * which anything that can write to Redis can forge. Build and run: make fuzz-history.
 *
 * The input: two bytes choose the points per series (10..5000 and beyond, to test the
 * clamp) and the ranks, the rest is JSON; an array's elements are records. Invariants:
 * no crash or leak whatever the records hold; every series has at most `points` points,
 * as many values as times, times strictly ascending; the job-loss series has at most
 * `points` buckets; the accuracy series is in epoch order from 1, an epoch's points between
 * its ends (eval records, with "step") by ascending step and then at most one at its end,
 * each with a finite accuracy and a rank in range, and an eval_sample only as a string of
 * at most HISTORY_SAMPLE_MAX bytes.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "jobhistory.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    long points = 2 + (long)data[0] * 24; /* 2 .. 6122: both clamps */
    int nranks = data[1] % 9;             /* 0 .. 8: the clamp to 1 */
    json_t *recs = json_loadb((const char *)data + 2, size - 2, JSON_DECODE_ANY, NULL);
    history_t *h = history_new(points, 1000.0, 1100.0, nranks);
    if (!h) abort();
    if (json_is_array(recs)) {
        size_t i;
        json_t *r;
        json_array_foreach(recs, i, r) history_add(h, r);
    } else history_add(h, recs);
    json_t *out = history_json(h);
    if (!out) abort();
    long bound = json_integer_value(json_object_get(out, "points"));
    if (bound < HISTORY_POINTS_MIN || bound > HISTORY_POINTS_MAX) abort();
    const char *key;
    json_t *list;
    json_object_foreach(json_object_get(out, "series"), key, list)
    {
        size_t i;
        json_t *s;
        json_array_foreach(list, i, s)
        {
            json_t *t = json_object_get(s, "t");
            size_t n = json_array_size(t);
            if (n == 0 || (long)n > bound || n != json_array_size(json_object_get(s, "v"))) abort();
            for (size_t k = 1; k < n; k++)
                if (!(json_real_value(json_array_get(t, k)) > json_real_value(json_array_get(t, k - 1)))) abort();
        }
    }
    if ((long)json_array_size(json_object_get(json_object_get(out, "job_loss"), "t")) > HISTORY_POINTS_MAX) abort();
    /* In (epoch, step) order: an epoch's evaluations between epoch ends ("step", from
     * eval records) by ascending step, then at most one at its end (no "step"). */
    json_int_t last = 0, last_step = -1;
    int last_end = 1;
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(out, "accuracy"), i, a)
    {
        json_int_t e = json_integer_value(json_object_get(a, "epoch"));
        json_int_t r = json_integer_value(json_object_get(a, "rank"));
        json_t *st = json_object_get(a, "step");
        const int at_end = st == NULL;
        const json_int_t step = at_end ? 0 : json_integer_value(st);
        if (e < 1 || e < last || (e == last && (last_end || (!at_end && step <= last_step))) ||
            !isfinite(json_number_value(json_object_get(a, "test_accuracy"))) || r < 0 || r >= (nranks < 1 ? 1 : nranks))
            abort();
        last_step = step;
        last_end = at_end;
        json_t *sample = json_object_get(a, "eval_sample"); /* a record's text, bounded */
        if (sample && (!json_is_string(sample) || json_string_length(sample) > HISTORY_SAMPLE_MAX)) abort();
        last = e;
    }
    json_decref(out);
    history_free(h);
    json_decref(recs);
    return 0;
}
