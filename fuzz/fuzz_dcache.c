/* fuzz/fuzz_dcache.c - libFuzzer target for the decoded cache's header
 * (dcache_header_parse, worker/dcache.c): what a worker reads back from a cache file
 * that another process wrote, or that a disk damaged. Build and run: make fuzz-dcache.
 *
 * Input: a flags byte, 8 bytes of file size (little-endian), then the header (zero
 * padded to 4096 bytes). Flags: bit 0 recompute the CRC so that the fields behind it are
 * reached; bit 1 use the size the header itself announces as the file's.
 * Invariants: a refusal is one line; an accepted header has regions that start on page
 * boundaries, do not overlap, and end exactly at the file's size; written back with
 * dcache_header_write and parsed again it gives the same header (a round trip).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "dcache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9) return 0;
    uint8_t flags = data[0];
    uint64_t file_bytes;
    memcpy(&file_bytes, data + 1, 8);
    data += 9, size -= 9;
    static uint8_t buf[DCACHE_HEADER_BYTES];
    memset(buf, 0, sizeof buf);
    memcpy(buf, data, size < sizeof buf ? size : sizeof buf);
    if (flags & 1) {
        uint32_t crc = (uint32_t)crc32(0L, buf, DCACHE_HEADER_BYTES - 4);
        memcpy(buf + DCACHE_HEADER_BYTES - 4, &crc, 4);
    }
    if (flags & 2) memcpy(&file_bytes, buf + 72, 8);
    size_t len = (flags & 4) ? sizeof buf : (size < sizeof buf ? size : sizeof buf);
    dcache_header_t h, again;
    char err[256] = "";
    if (dcache_header_parse(buf, len, file_bytes, &h, err, sizeof err) != 0) {
        if (!err[0] || strchr(err, '\n')) abort();
        return 0;
    }
    for (int s = 0; s < 2; s++) {
        uint64_t end = h.offset[s] + dcache_region_bytes(h.n[s], h.C, h.H, h.W);
        if (h.offset[s] % 4096 || end > file_bytes) abort();
        if (s == 0 && end > h.offset[1]) abort();
        if (s == 1 && end != file_bytes) abort();
    }
    if (h.offset[0] < DCACHE_HEADER_BYTES || h.n[0] < 1 || h.n[1] < 1 || h.classes < 1) abort();
    uint8_t out[DCACHE_HEADER_BYTES];
    dcache_header_write(&h, out);
    if (dcache_header_parse(out, sizeof out, file_bytes, &again, err, sizeof err) != 0) abort();
    if (memcmp(&h, &again, sizeof h) != 0) abort();
    return 0;
}
