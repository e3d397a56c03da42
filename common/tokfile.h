/* common/tokfile.h - the files of a text or token data set (dataset.format "text" and
 * "tokens", docs/JOB_SPEC.md "Language models"): which files a split is, and where a
 * file's tokens are.
 *
 * text: DIR/train.txt and DIR/val.txt, any bytes; each byte is a token (vocabulary 256).
 * tokens: DIR/train.bin and DIR/val.bin, or shards DIR/train_*.bin and DIR/val_*.bin (one
 * split of several files, in name order), of uint16 token ids, little-endian, either
 *   llm.c's shard: a header of 256 int32 (magic 20240520, version 1, the token count), then
 *     exactly that many ids; or
 *   nanoGPT's array (numpy's tofile of a uint16 array): ids only, an even byte count.
 * A file that starts with the magic is read as llm.c's: its header must then say its
 * version and a count that the file holds exactly.
 *
 * The worker (worker/textdata.c) maps the files and checks every id against the
 * vocabulary; the coordinator's probe (common/dsprobe.c) reads only the headers. The
 * parsers here take bytes, never a file, so that the fuzzer drives them
 * (fuzz/fuzz_tokfile.c).
 */
#ifndef PACER_TOKFILE_H
#define PACER_TOKFILE_H

#include <stddef.h>
#include <stdint.h>

#define TOKFILE_MAGIC 20240520
#define TOKFILE_VERSION 1
#define TOKFILE_HEADER_BYTES 1024 /* 256 int32 */
#define TOKFILE_MAX_SHARDS 1024   /* files of one split */
#define TOKFILE_PATH_MAX 4096

/* Where a file's tokens are: offset bytes in, ntokens of width bytes each. */
typedef struct {
    uint64_t offset, ntokens;
    int width;  /* 1: bytes (text), 2: uint16 ids */
    int header; /* 1: llm.c's header was read */
} tokfile_layout_t;

/* The layout of a file of file_bytes bytes whose first bytes are head (headlen of them,
 * at most TOKFILE_HEADER_BYTES are read; fewer when the file is shorter). width 1 (text:
 * the whole file) or 2 (tokens: llm.c's header or none). 0, or -1 with err naming path: an
 * empty file, an odd byte count, a header of another version, or one whose count is not
 * what the file holds ("header says 1000 tokens, the file holds 998"). */
int tokfile_layout(const uint8_t *head, size_t headlen, uint64_t file_bytes, int width, const char *path,
                   tokfile_layout_t *out, char *err, size_t errlen);

/* The first id of ids (n uint16, little-endian bytes) that is >= vocab: 0 when none (then
 * *max_id, unless NULL, is the largest id, or 0 for n 0), or -1 with err naming path, the id
 * and its index ("id 300 at token 17 is outside the vocabulary (vocab_size 256)"). */
int tokfile_check_ids(const uint8_t *ids, uint64_t n, int vocab, const char *path, int *max_id, char *err,
                      size_t errlen);

/* The files of split ("train" or "val") of a data set at dir in format text (width 1:
 * SPLIT.txt) or tokens (width 2: SPLIT.bin, else SPLIT_*.bin in name order), into paths
 * (TOKFILE_MAX_SHARDS of TOKFILE_PATH_MAX, the caller's); their count, or -1 with err
 * (none, too many, a path too long, a folder that cannot be read). */
int tokfile_split_files(const char *dir, const char *split, int width, char (*paths)[TOKFILE_PATH_MAX], char *err,
                        size_t errlen);

/* The layout of the file at path (its header read, its size from fstat), opened through
 * the data roots' checked open (common/dataroot.h: a link out of the roots or a FIFO is
 * refused by name, never read or waited on): 0, or -1 with err. */
int tokfile_open_layout(const char *path, int width, tokfile_layout_t *out, char *err, size_t errlen);
/* The same for a file the caller opened (fd, named path in messages). */
int tokfile_fd_layout(int fd, const char *path, int width, tokfile_layout_t *out, char *err, size_t errlen);

#endif
