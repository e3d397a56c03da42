/* worker/textdata.h - a text or token data set (dataset.format "text" or "tokens":
 * common/tokfile.h has the files) ready as two dataset_t of windows.
 *
 * Nothing is decoded: a byte of text and a uint16 id are read where they lie, so every file
 * is mapped read-only (the page cache holds one copy for every rank of a host, and a file
 * larger than memory is paged in as windows are read). Every id of a token file is checked
 * against the vocabulary once, here, so that a batch can never index past the model's
 * embedding: a file with an id out of range is refused by name before training.
 */
#ifndef PACER_TEXTDATA_H
#define PACER_TEXTDATA_H

#include <stddef.h>

#include "catalog.h"
#include "data.h"
#include "tokenizer.h"

/* A text file tokenized in memory (a tokenizer other than bytes) is at most this long:
 * its ids are held as uint16 beside it while it is encoded; a larger corpus goes through
 * `pacer tokenize` into a token data set. */
#define TEXTDATA_MAX_TOKENIZE_BYTES (1ull << 30)

typedef struct {
    catalog_format_t format; /* CATALOG_FORMAT_TEXT or CATALOG_FORMAT_TOKENS */
    const char *path;        /* the folder */
    int block;               /* tokens per window, >= 1 */
    int vocab;               /* tokens: dataset.vocab_size (required); text: 0 or 256 */
    /* text: NULL or a bytes tokenizer reads each byte where it lies; another (chars, bpe)
     * tokenizes each file into uint16 ids in an anonymous mapping, each rank its own. */
    const tokenizer_t *tokenizer;
    /* tokenized text: where its ids are kept as llm.c shards for later loads (the decoded
     * cache, dataset.cache_dir); NULL or "": not kept */
    const char *cache_dir;
    /* NULL, or asked while a long text is tokenized whether to give up (the worker's notice,
     * worker/sigterm.h): a nonzero answer ends the load with DATA_EFORMAT and err saying so */
    int (*stop)(void);
} textdata_opts_t;

/* Loads the train split (train.*) into train and the validation split (val.*) into test.
 * 0 (DATA_OK), or a DATA_* code with err naming the file and what is wrong: no file, an
 * empty or odd-sized one, an llm.c header that lies, an id outside the vocabulary, fewer
 * than block + 1 tokens in a split, more than INT_MAX windows. */
int textdata_load(const textdata_opts_t *o, dataset_t *train, dataset_t *test, char *err, size_t errlen);

/* The vocabulary of o's format: the tokenizer's (256 for bytes) for text, o->vocab for tokens. */
int textdata_vocab(const textdata_opts_t *o);

#endif
