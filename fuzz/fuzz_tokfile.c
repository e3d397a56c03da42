/* fuzz/fuzz_tokfile.c - libFuzzer target for the token-file parsers (common/tokfile.c): the
 * bytes of a whole token file, read as text (width 1) and as uint16 ids (width 2), its ids
 * checked against a vocabulary the input's last byte picks. Build and run: make fuzz-tokfile.
 *
 * Invariants: a refusal is one line naming the file; an accepted layout covers the bytes
 * exactly (offset + ntokens x width = size: a header that lies is refused, never read past)
 * with at least one token, and a header only at offset TOKFILE_HEADER_BYTES; the id check
 * reads only those bytes (ASan), and when it accepts, every id is below the vocabulary and
 * max_id is the largest. The seeds in fuzz/corpus/tokfile/ are an llm.c shard and a
 * nanoGPT array.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokfile.h"

static void check_refusal(const char *err)
{
    if (!err[0] || strchr(err, '\n') || strncmp(err, "f:", 2) != 0) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int width = 1; width <= 2; width++) {
        tokfile_layout_t l;
        char err[256] = "";
        const size_t head = size < TOKFILE_HEADER_BYTES ? size : TOKFILE_HEADER_BYTES;
        if (tokfile_layout(data, head, size, width, "f", &l, err, sizeof err) != 0) {
            check_refusal(err);
            continue;
        }
        if (l.ntokens < 1 || l.offset + l.ntokens * (uint64_t)width != size) abort();
        if (l.offset != (l.header ? TOKFILE_HEADER_BYTES : 0) || (width == 1 && l.header)) abort();
        if (width == 1) continue;
        const int vocab = size ? 1 + data[size - 1] * 257 : 1;
        int max_id = -1;
        err[0] = '\0';
        if (tokfile_check_ids(data + l.offset, l.ntokens, vocab, "f", &max_id, err, sizeof err) != 0) {
            check_refusal(err);
            continue;
        }
        int top = 0;
        for (uint64_t i = 0; i < l.ntokens; i++) {
            const int id = data[l.offset + 2 * i] | data[l.offset + 2 * i + 1] << 8;
            if (id >= vocab) abort();
            if (id > top) top = id;
        }
        if (max_id != top) abort();
    }
    return 0;
}
