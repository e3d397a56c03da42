/* tests/tools/ckpt_patch.c - forges a checkpoint: sets one header field and recomputes
 * the CRC, so that a test can show a hostile field is refused for what it is, not for
 * a bad checksum (tests/integration/hardening_memory.sh).
 * usage: ckpt_patch FILE FIELD VALUE
 *        ckpt_patch FILE FIELD       (prints the field instead: tests that read one)
 * FIELD is a name checkpoint_field_at knows ("epoch", "batch_of[0]", "spec_hash", ...);
 * VALUE an integer, written little-endian in the field's width (4 or 8 bytes; wider
 * fields get it in their first 8 bytes and zeros after). Printed: a 4-byte field as a
 * signed integer, an 8-byte or wider one's first 8 bytes as an unsigned one. Exit 0, or 2
 * on a bad argument. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 3) {
        fprintf(stderr, "usage: ckpt_patch FILE FIELD [VALUE]\n");
        return 2;
    }
    size_t off, size;
    if (checkpoint_field_at(argv[2], &off, &size) != 0) {
        fprintf(stderr, "ckpt_patch: unknown field %s\n", argv[2]);
        return 2;
    }
    char *end = NULL;
    errno = 0;
    long long v = argc == 4 ? strtoll(argv[3], &end, 0) : 0;
    if (argc == 4 && (errno || *end)) {
        fprintf(stderr, "ckpt_patch: %s: not an integer\n", argv[3]);
        return 2;
    }
    FILE *f = fopen(argv[1], "r+b");
    if (!f) {
        fprintf(stderr, "ckpt_patch: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, f) != len || off + size > len) {
        fprintf(stderr, "ckpt_patch: %s: too short for %s\n", argv[1], argv[2]);
        return 2;
    }
    if (argc == 3) {
        int32_t x;
        uint64_t u;
        if (size == 4) memcpy(&x, buf + off, 4), printf("%d\n", (int)x);
        else memcpy(&u, buf + off, 8), printf("%llu\n", (unsigned long long)u);
        free(buf);
        fclose(f);
        return 0;
    }
    if (size == 4) {
        int32_t x = (int32_t)v;
        memcpy(buf + off, &x, 4);
    } else {
        memset(buf + off, 0, size);
        memcpy(buf + off, &v, 8);
    }
    checkpoint_fix_crc(buf, len);
    rewind(f);
    if (fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "ckpt_patch: %s: write failed\n", argv[1]);
        return 2;
    }
    free(buf);
    return 0;
}
