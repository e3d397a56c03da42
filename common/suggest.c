/* common/suggest.c - see suggest.h. */
#include "suggest.h"

#include <stdio.h>

int suggest_distance(const char *a, size_t alen, const char *b, size_t blen, int max)
{
    if (max < 0) max = 0;
    if (max > SUGGEST_MAX_EDITS) max = SUGGEST_MAX_EDITS;
    const size_t diff = alen > blen ? alen - blen : blen - alen;
    if (diff > (size_t)max) return max + 1; /* as many edits as the lengths differ, at least */
    /* both, so that the answer is symmetric */
    if (alen > SUGGEST_NAME_MAX + SUGGEST_MAX_EDITS || blen > SUGGEST_NAME_MAX + SUGGEST_MAX_EDITS) return max + 1;
    /* One row of the dynamic program over b, the other string walked by rows: O(alen *
     * blen), both bounded above. */
    int row[SUGGEST_NAME_MAX + SUGGEST_MAX_EDITS + 1];
    for (size_t j = 0; j <= blen; j++) row[j] = (int)j;
    for (size_t i = 1; i <= alen; i++) {
        int diag = row[0], lowest;
        row[0] = (int)i;
        lowest = row[0];
        for (size_t j = 1; j <= blen; j++) {
            const int up = row[j];
            int d = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < d) d = up + 1;
            if (row[j - 1] + 1 < d) d = row[j - 1] + 1;
            row[j] = d;
            diag = up;
            if (d < lowest) lowest = d;
        }
        if (lowest > max) return max + 1; /* every path is already too long */
    }
    return row[blen] <= max ? row[blen] : max + 1;
}

void suggest_init(suggest_t *s, const char *word, size_t word_len)
{
    s->word = word;
    s->word_len = word_len;
    s->limit = word_len <= SUGGEST_SHORT_WORD ? 1 : SUGGEST_MAX_EDITS;
    s->best = NULL;
    s->best_len = 0;
    s->best_distance = s->limit + 1;
}

void suggest_offer(suggest_t *s, const char *cand, size_t len)
{
    if (!cand || len == 0 || len > SUGGEST_NAME_MAX) return;
    const int d = suggest_distance(s->word, s->word_len, cand, len, s->limit);
    if (d == 0 || d >= s->best_distance) return;
    s->best = cand;
    s->best_len = len;
    s->best_distance = d;
}

void suggest_hint(const suggest_t *s, const char *prefix, char *out, size_t len)
{
    if (!len) return;
    out[0] = 0;
    if (s->best) snprintf(out, len, " (did you mean %s%.*s?)", prefix ? prefix : "", (int)s->best_len, s->best);
}
