/* tests/tools/ckpt_patch.c - forges a checkpoint: sets one header field or one float of
 * its arrays and recomputes the CRC, so that a test can show a hostile field or value is
 * refused for what it is, not for a bad checksum (tests/integration/hardening_memory.sh,
 * ckpt_corrupt_state.sh); or one float of a parameter-server worker's error-feedback file
 * (CKPT.ef<index>, its own CRC recomputed).
 * usage: ckpt_patch FILE FIELD VALUE
 *        ckpt_patch FILE FIELD       (prints the field instead: tests that read one)
 * FIELD is a name checkpoint_field_at knows ("epoch", "batch_of[0]", "spec_hash", ...);
 * VALUE an integer, written little-endian in the field's width (4 or 8 bytes; wider
 * fields get it in their first 8 bytes and zeros after). Printed: a 4-byte field as a
 * signed integer, an 8-byte or wider one's first 8 bytes as an unsigned one. Or FIELD is
 * a float element checkpoint_data_at knows ("params[i]", "momentum[i]", "buffers[i]",
 * "compress_q[i]", "compress_err[i]", "moment2[i]"), or "ef[i]" of an error-feedback
 * file, and VALUE a float (strtof's: "nan", "-inf", "1e30", ...). Exit 0, or 2 on a bad
 * argument. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"

/* Float element FIELD of the file image buf (len bytes) set to VALUE, the CRC fixed: 0, 1
 * when FIELD names no float element, 2 on a bad value or an element past the file. */
static int patch_float(unsigned char *buf, size_t len, const char *field, const char *value)
{
    size_t off;
    unsigned long long i;
    char close = 0;
    const int ef = strncmp(field, "ef[", 3) == 0;
    if (ef) {
        if (sscanf(field + 2, "[%llu%c", &i, &close) != 2 || close != ']' || len < CKPT_EF_HEADER + 4 ||
            memcmp(buf, CKPT_EF_MAGIC, 8) != 0 || i >= (len - CKPT_EF_HEADER - 4) / sizeof(float)) {
            fprintf(stderr, "ckpt_patch: %s: not an element of a %s file\n", field, CKPT_EF_MAGIC);
            return 2;
        }
        off = CKPT_EF_HEADER + (size_t)i * sizeof(float);
    } else if (checkpoint_data_at(buf, len, field, &off) != 0) return 1;
    char *end = NULL;
    errno = 0;
    const float v = strtof(value, &end);
    if (errno == EINVAL || end == value || *end) {
        fprintf(stderr, "ckpt_patch: %s: not a float\n", value);
        return 2;
    }
    memcpy(buf + off, &v, sizeof v);
    if (ef) checkpoint_ef_fix_crc(buf, len);
    else checkpoint_fix_crc(buf, len);
    return 0;
}

/* The image written back over FILE; 0, or 2. */
static int write_back(FILE *f, const char *path, const unsigned char *buf, size_t len)
{
    rewind(f);
    if (fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "ckpt_patch: %s: write failed\n", path);
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 3) {
        fprintf(stderr, "usage: ckpt_patch FILE FIELD [VALUE]\n");
        return 2;
    }
    size_t off, size;
    const int header = checkpoint_field_at(argv[2], &off, &size) == 0;
    FILE *f = fopen(argv[1], "r+b");
    if (!f) {
        fprintf(stderr, "ckpt_patch: %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    fseek(f, 0, SEEK_END);
    size_t len = (size_t)ftell(f);
    rewind(f);
    unsigned char *buf = malloc(len ? len : 1);
    if (!buf || fread(buf, 1, len, f) != len || (header && off + size > len)) {
        fprintf(stderr, "ckpt_patch: %s: too short for %s\n", argv[1], argv[2]);
        return 2;
    }
    if (!header) {
        int rc = argc == 4 ? patch_float(buf, len, argv[2], argv[3]) : 1;
        if (rc == 1) fprintf(stderr, "ckpt_patch: unknown field %s\n", argv[2]);
        if (rc == 0) rc = write_back(f, argv[1], buf, len);
        else fclose(f), rc = 2;
        free(buf);
        return rc;
    }
    char *end = NULL;
    errno = 0;
    long long v = argc == 4 ? strtoll(argv[3], &end, 0) : 0;
    if (argc == 4 && (errno || *end)) {
        fprintf(stderr, "ckpt_patch: %s: not an integer\n", argv[3]);
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
    const int rc = write_back(f, argv[1], buf, len);
    free(buf);
    return rc;
}
