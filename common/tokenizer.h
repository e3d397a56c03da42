/* common/tokenizer.h - one interface over the ways text becomes token ids
 * (dataset.tokenizer, docs/JOB_SPEC.md "Language models"):
 *   bytes  each byte is a token (vocabulary 256); any bytes round-trip.
 *   chars  the sorted set of distinct UTF-8 characters of the data set's text (train.txt and
 *          val.txt both, as nanoGPT's shakespeare_char builds it, so the validation text never
 *          has a character the model has no id for); ids in code point order. The text must be
 *          valid UTF-8. A character outside the vocabulary (in a prompt) is refused by name and
 *          position, never mapped silently.
 *   bpe    GPT-2's byte-level BPE (common/bpe.h) from vocab.json and merges.txt, or a Hugging
 *          Face tokenizer.json.
 *
 * A tokenizer is saved as one file next to a job's checkpoints (DIR/NAME.tokenizer beside
 * DIR/NAME.ckpt) so that another process (generation) rebuilds the exact vocabulary: the
 * chars list itself, or the BPE source files' bytes, never a path that may be gone. The file:
 *   "pacer-tokenizer 1\n", then "kind bytes\n" | "kind chars\n" | "kind bpe\n" | "kind bpe-hf\n",
 *   then sections "NAME LEN\n" followed by LEN raw bytes and "\n": chars: "chars LEN" (the
 *   characters concatenated, strictly increasing); bpe: "vocab LEN" and "merges LEN"; bpe-hf:
 *   "json LEN".
 * Every input (texts, ids, the file) is bounded and a bad one is refused with err naming
 * what is wrong. The parser takes bytes so that the fuzzer drives it (fuzz/fuzz_tokenizer.c).
 */
#ifndef PACER_TOKENIZER_H
#define PACER_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#define TOKENIZER_MAX_CHARS 65536             /* ids of a token file are uint16 */
#define TOKENIZER_MAX_FILE_BYTES (160u << 20) /* a saved file: two BPE sources and headers */
#define TOKENIZER_FILE_SUFFIX ".tokenizer"
/* The tokenizer `pacer tokenize` writes beside a token data set's shards (DIR/train.bin,
 * DIR/val.bin): a "tokens" data set that holds it trains with it, and the worker saves it
 * beside the job's checkpoints as a text job's, so that generation decodes the right ids. */
#define TOKENIZER_DATASET_FILE "tokens.tokenizer"

typedef enum { TOKENIZER_BYTES, TOKENIZER_CHARS, TOKENIZER_BPE } tokenizer_kind_t;

typedef struct tokenizer tokenizer_t;

/* The bytes tokenizer (vocabulary 256); NULL only when out of memory. */
tokenizer_t *tokenizer_bytes(void);
/* A chars tokenizer whose vocabulary is every character of the n texts (texts[i], lens[i]
 * bytes, names[i] for messages: "train.txt"): NULL with err for invalid UTF-8 (file and
 * byte offset), more than TOKENIZER_MAX_CHARS characters, or no text at all. */
tokenizer_t *tokenizer_chars_build(const char *const *texts, const size_t *lens, const char *const *names, int n,
                                   char *err, size_t errlen);
/* The same from the text files at paths (each at most 4 GiB). */
tokenizer_t *tokenizer_chars_build_files(const char *const *paths, int n, char *err, size_t errlen);
/* GPT-2's BPE from vocab.json and merges.txt, or from a tokenizer.json. NULL with err. */
tokenizer_t *tokenizer_bpe_files(const char *vocab_path, const char *merges_path, char *err, size_t errlen);
tokenizer_t *tokenizer_bpe_hf_file(const char *path, char *err, size_t errlen);

/* The tokenizer a text data set names: kind "bytes", "chars" (built from dir/train.txt and
 * dir/val.txt) or "bpe" (vocab and merges, else file: paths as the spec gives them). NULL
 * with err naming the kind or file. */
tokenizer_t *tokenizer_for_dataset(const char *kind, const char *dir, const char *vocab, const char *merges,
                                   const char *file, char *err, size_t errlen);

void tokenizer_free(tokenizer_t *t);
tokenizer_kind_t tokenizer_kind(const tokenizer_t *t);
/* "bytes", "chars" or "bpe". */
const char *tokenizer_kind_name(const tokenizer_t *t);
/* One more than the largest id. */
int tokenizer_vocab_size(const tokenizer_t *t);

/* Encodes len bytes of text into a malloc'd array of ids (*ids, *n; the caller frees): 0, or
 * -1 with err (chars: a character not in the vocabulary or invalid UTF-8, named with its byte
 * offset; out of memory). */
int tokenizer_encode(const tokenizer_t *t, const char *text, size_t len, uint32_t **ids, size_t *n, char *err,
                     size_t errlen);
/* The same, giving up when stop (not NULL) answers nonzero (a BPE asks it every MiB of
 * text, common/bpe.h; bytes and chars are a pass over the text, never long enough to ask):
 * TOKENIZER_STOPPED with err saying so. The ids take 4 bytes a byte of text while encoding
 * (common/memest.c counts them). */
#define TOKENIZER_STOPPED (-2)
int tokenizer_encode_until(const tokenizer_t *t, const char *text, size_t len, int (*stop)(void), uint32_t **ids,
                           size_t *n, char *err, size_t errlen);
/* Decodes n ids into a malloc'd text (*text, *len bytes, NUL after them): 0, or -1 with err
 * naming an id outside the vocabulary and its index. */
int tokenizer_decode(const tokenizer_t *t, const uint32_t *ids, size_t n, char **text, size_t *len, char *err,
                     size_t errlen);

/* The saved form (the file's bytes, malloc'd) and its parser; name is for messages. */
int tokenizer_serialize(const tokenizer_t *t, char **buf, size_t *len, char *err, size_t errlen);
tokenizer_t *tokenizer_parse(const char *buf, size_t len, const char *name, char *err, size_t errlen);
/* Writes the saved form to path atomically / reads it back: 0 / a tokenizer, or -1 / NULL
 * with err naming path. tokenizer_load reads a data set's file (DIR/tokens.tokenizer)
 * through the data roots' checked open (common/dataroot.h); every reader of a tokenizer's
 * files here does (vocab.json, merges.txt, tokenizer.json, chars' text), except the
 * checkpoint's own file below, which is checked for its type alone. */
int tokenizer_save(const tokenizer_t *t, const char *path, char *err, size_t errlen);
tokenizer_t *tokenizer_load(const char *path, char *err, size_t errlen);
/* Whether a and b give the same ids for every text: same kind and vocabulary. */
int tokenizer_equal(const tokenizer_t *a, const tokenizer_t *b);

/* The tokenizer file of a job whose checkpoints are dir/name*.ckpt: dir/name.tokenizer. 0, or
 * -1 when it does not fit in len. */
int tokenizer_path_for_job(char *out, size_t len, const char *dir, const char *name);
/* The tokenizer a checkpoint file was trained with: the job's file beside it (NAME.ckpt or a
 * linked NAME.step{S}-...ckpt -> NAME.tokenizer). A checkpoint without one is of a job that
 * read its text as bytes (every text job before tokenizers were kept): the bytes tokenizer.
 * NULL with err when the file exists but cannot be read or is malformed. */
tokenizer_t *tokenizer_load_for_checkpoint(const char *ckpt_path, char *err, size_t errlen);

#endif
