/* common/bpe.h - GPT-2's byte-level BPE tokenizer: its vocabulary (vocab.json: token
 * string -> id, strings in GPT-2's bytes_to_unicode alphabet) and ranked merges
 * (merges.txt: "#version" line, then one "LEFT RIGHT" pair a line, best first); GPT-2's
 * pre-tokenizer regex
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * done by hand over UTF-8 code points (bytes that are not valid UTF-8 are one code point
 * each that is neither letter, number nor space, as they are to tiktoken's byte regex);
 * merges by rank; encode and decode.
 *
 * Every input is bounded (BPE_MAX_* below) and a malformed one is refused with err naming
 * the file and what is wrong. The loaders take bytes, not files, so that the fuzzer drives
 * them (fuzz/fuzz_bpe.c).
 */
#ifndef PACER_BPE_H
#define PACER_BPE_H

#include <stddef.h>
#include <stdint.h>

#define BPE_MAX_FILE_BYTES (64u << 20) /* vocab.json or merges.txt */
#define BPE_MAX_VOCAB 1000000          /* ids are 0 .. BPE_MAX_VOCAB-1 */
#define BPE_MAX_TOKEN_BYTES 1024       /* one vocabulary token, in raw bytes */
#define BPE_MAX_PRETOKEN 4096          /* bytes of one pre-token; longer runs are split */

typedef struct bpe bpe_t;

typedef struct {
    uint32_t lo, hi;
} bpe_range_t;

/* bpe_unicode.c: Unicode letters and numbers, sorted inclusive ranges. */
extern const bpe_range_t bpe_letter_ranges[];
extern const size_t bpe_letter_ranges_count;
extern const bpe_range_t bpe_number_ranges[];
extern const size_t bpe_number_ranges_count;

/* A tokenizer from the bytes of vocab.json and merges.txt: NULL with err on any problem
 * (malformed JSON, an id out of range or repeated, a token that is not in GPT-2's byte
 * alphabet, a merge whose parts or result are not in the vocabulary, a missing byte). */
bpe_t *bpe_load(const char *vocab, size_t vocab_len, const char *merges, size_t merges_len, char *err, size_t errlen);
/* The same from files (each at most BPE_MAX_FILE_BYTES). */
bpe_t *bpe_load_files(const char *vocab_path, const char *merges_path, char *err, size_t errlen);
/* A tokenizer from a Hugging Face tokenizer.json of the BPE kind (model.type "BPE",
 * model.vocab and model.merges, byte-level as GPT-2's), its bytes or its file; NULL with err. */
bpe_t *bpe_load_hf(const char *json, size_t len, char *err, size_t errlen);
bpe_t *bpe_load_hf_file(const char *path, char *err, size_t errlen);
void bpe_free(bpe_t *b);
/* One more than the largest id. */
int bpe_vocab_size(const bpe_t *b);

/* Encodes text (len bytes, any bytes) into ids: a malloc'd array (*out, *n ids; len of
 * them allocated: 4 bytes a byte of text, which common/memest.c counts), 0, or -1 with err
 * (out of memory only). Linear in len: each pre-token is found within a bounded window
 * (bpe_piece_len), each piece merged within BPE_MAX_PRETOKEN bytes. */
int bpe_encode(const bpe_t *b, const char *text, size_t len, uint32_t **out, size_t *n, char *err, size_t errlen);
/* The same, asking stop (not NULL) every BPE_STOP_EVERY bytes of text whether to give up:
 * a nonzero answer (a signal's number: the worker's notice) ends it with BPE_STOPPED and err
 * saying where, nothing allocated. */
#define BPE_STOP_EVERY (1u << 20)
#define BPE_STOPPED (-2)
int bpe_encode_until(const bpe_t *b, const char *text, size_t len, int (*stop)(void), uint32_t **out, size_t *n,
                     char *err, size_t errlen);
/* Decodes n ids into the bytes they stand for (malloc'd, *len of them, NUL after them):
 * 0, or -1 with err naming an id outside the vocabulary. */
int bpe_decode(const bpe_t *b, const uint32_t *ids, size_t n, char **out, size_t *len, char *err, size_t errlen);

/* The pre-tokenizer alone: the length in bytes of the pre-token at text[pos], >= 1 while
 * pos < len. Exposed for tests. */
size_t bpe_pretoken_len(const char *text, size_t len, size_t pos);
/* The piece the encoder takes at text[pos]: the pre-token there, cut to BPE_MAX_PRETOKEN
 * bytes at a code point when longer. It reads at most BPE_MAX_PRETOKEN + BPE_PIECE_SLACK
 * bytes from pos whatever follows (a run of one class megabytes long included), so that
 * encoding is linear. Exposed for tests. */
#define BPE_PIECE_SLACK 16
size_t bpe_piece_len(const char *text, size_t len, size_t pos);

#endif
