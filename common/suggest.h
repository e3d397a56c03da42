/* common/suggest.h - "did you mean": the known name closest to a mistyped one, for the
 * refusals of an unknown spec field (common/spec.c) and of an unknown command or option of
 * `pacer` (cli/cliargs.c). A name counts as close when it is a few edits away (Levenshtein:
 * a character inserted, deleted or replaced): `epoch` -> `epochs`, `--jsn` -> `--json`.
 * Pure and bounded: the words come from outside (JSON keys, argv), so no length is
 * trusted; a word much longer than every candidate is never close to one.
 */
#ifndef PACER_SUGGEST_H
#define PACER_SUGGEST_H

#include <stddef.h>

/* The most edits a suggestion may be away: 1 for a word of up to 4 characters (where two
 * edits turn most words into most others), 2 beyond. */
#define SUGGEST_SHORT_WORD 4
#define SUGGEST_MAX_EDITS 2
/* Candidates longer than this are never suggested (every name pacer knows is shorter). */
#define SUGGEST_NAME_MAX 64

/* The edit distance between a[0..alen) and b[0..blen) when it is at most max (0 <= max
 * <= SUGGEST_MAX_EDITS), else max + 1 (also when either is longer than SUGGEST_NAME_MAX +
 * SUGGEST_MAX_EDITS: no name is that close to it). Symmetric. */
int suggest_distance(const char *a, size_t alen, const char *b, size_t blen, int max);

/* One search: the word, then every candidate offered in turn; the closest within the
 * word's edit budget wins, the first of equally close ones. */
typedef struct {
    const char *word;
    size_t word_len;
    int limit;         /* the word's budget (1 or 2 edits) */
    const char *best;  /* NULL: none close enough yet */
    size_t best_len;   /* best is not terminated where it came from a longer string */
    int best_distance; /* of best; limit + 1 while none */
} suggest_t;

void suggest_init(suggest_t *s, const char *word, size_t word_len);
/* Offers cand[0..len): kept when closer than the best so far; the word itself (distance
 * 0) is never a suggestion. */
void suggest_offer(suggest_t *s, const char *cand, size_t len);
/* " (did you mean PREFIXbest?)" into out (always terminated), or "" when no candidate was
 * close. prefix: what the candidate is shown after ("--", "optimizer."; NULL = none). */
void suggest_hint(const suggest_t *s, const char *prefix, char *out, size_t len);

#endif
