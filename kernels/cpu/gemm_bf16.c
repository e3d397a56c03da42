/* kernels/cpu/gemm_bf16.c - see gemm_bf16.h.
 *
 * The two matrix-unit paths share one packing. A becomes blocks of 16 rows x 32 k (one
 * AMX tile, rows of 64 bytes), B blocks of 16 k pairs x 16 columns x 2 (the pair layout
 * that vdpbf16ps and tdpbf16ps read: a B row of 64 bytes holds k = 2p and 2p + 1 of 16
 * columns). Both are zero padded to whole blocks. The AMX loop runs 2 x 2 tiles of output,
 * and 1 x 2, 2 x 1 or 1 x 1 at the last row or column block of an odd count. */
#include "gemm_bf16.h"

#include <cblas.h>
#include <immintrin.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "gemm_bf16_pack.h"
#include "parallel.h"

#define KB GEMM_BF16_KB
#define BLK GEMM_BF16_BLK
#define BLK_ELEMS GEMM_BF16_BLK_ELEMS
#define NB_CHUNK 16 /* column blocks whose packed B (16 x K x 64 bytes) one sweep keeps hot */

/* prfchw: PREFETCHW, which every CPU with these units has (AMD's since K8, Intel's since
 * Broadwell) */
#define AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,prfchw")))
#define AMX __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,prfchw,amx-tile,amx-bf16")))

/* ---- scratch: each thread's own, grown and kept while the thread lives ---------------- */

typedef struct {
    void *p;
    size_t cap;
} buf_t;

/* A thread's three buffers, freed when the thread ends (a pthread key's destructor: the
 * kernels' threads come and go with par_set_threads). */
typedef struct {
    buf_t a, b, c;
} scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *v)
{
    scratch_t *s = v;
    free(s->a.p);
    free(s->b.p);
    free(s->c.p);
    free(s);
}

static void scratch_key_make(void) { pthread_key_create(&scratch_key, scratch_free); }

/* This thread's scratch, or NULL (out of memory) */
static scratch_t *scratch(void)
{
    pthread_once(&scratch_once, scratch_key_make);
    scratch_t *s = pthread_getspecific(scratch_key);
    if (!s && (s = calloc(1, sizeof *s)) != NULL && pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

static void *grow(buf_t *b, size_t bytes)
{
    if (!b) return NULL;
    if (bytes <= b->cap) return b->p;
    size_t cap = (bytes + 4095) & ~(size_t)4095;
    void *p = aligned_alloc(64, cap);
    if (!p) return NULL;
    free(b->p);
    b->p = p;
    b->cap = cap;
    return p;
}

static inline int min_int(int a, int b) { return a < b ? a : b; }

static inline float elem(int trans, const float *X, int ld, int r, int c)
{
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

/* ---- the portable path ----------------------------------------------------------------- */

/* Without scratch (out of memory): the sums one by one, in k order. */
static void direct(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += bf16_round(elem(ta, A, lda, m, k)) * bf16_round(elem(tb, B, ldb, k, n));
            float *c = C + (size_t)m * ldc + n;
            *c = beta == 0.0f ? alpha * s : alpha * s + beta * *c;
        }
}

static void portable(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    /* the operands as stored: A is M x K, or K x M when transposed; B likewise */
    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
    scratch_t *sc = scratch();
    float *a = grow(sc ? &sc->a : NULL, (size_t)ar * ac * sizeof(float));
    float *b = grow(sc ? &sc->b : NULL, (size_t)br * bc * sizeof(float));
    if (!a || !b) {
        direct(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    bf16_round_rows(ar, ac, A, (size_t)lda, a);
    bf16_round_rows(br, bc, B, (size_t)ldb, b);
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, alpha, a, ac, b,
                bc, beta, C, ldc);
}

/* ---- packing ----------------------------------------------------------------------------- */

typedef gemm_bf16_packed_t packed_t;

/* B's packings by rows ask for the rows PACK_ROWS_AHEAD on: such a B is mostly an
 * activation (a weight gradient's), cold (written a pass ago), and the hardware
 * prefetchers left the packing waiting on memory (prefetch.h; A's packings gained nothing
 * from it) */
#define PACK_ROWS_AHEAD 8

/* Rows r0 .. r0 + n - 1 (those below R) of a row-major operand, bytes [from, to) of each,
 * asked for a line at a time */
static inline void prefetch_rows(const void *base, size_t row_bytes, int r0, int n, int R, size_t from, size_t to)
{
    for (int r = r0; r < r0 + n && r < R; r++)
        for (size_t b = from; b < to; b += 64) __builtin_prefetch((const char *)base + (size_t)r * row_bytes + b, 0, 3);
}

/* The common case of A (a row-major activation): 32 k of a row are two vector loads and
 * one conversion (vcvtne2ps2bf16 rounds to nearest even, as bf16_from_float, but takes a
 * denormal as zero, as the units do anyway). */
AVX512BF16 static void pack_a_rows(int M, int K, const float *A, int lda, const packed_t *p)
{
    for (int mb = 0; mb < p->mbn; mb++)
        for (int r = 0; r < BLK; r++) {
            int m = mb * BLK + r;
            const float *x = A + (size_t)m * lda;
            for (int kb = 0; kb < p->kbn; kb++) {
                uint16_t *t = p->a + ((size_t)mb * p->kbn + kb) * BLK_ELEMS + r * KB;
                int k0 = kb * KB, left = m < M ? K - k0 : 0;
                __mmask16 lo = left >= 16 ? 0xffff : (__mmask16)((1u << (left > 0 ? left : 0)) - 1);
                __mmask16 hi = left >= 32 ? 0xffff : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0;
                __m512 v0 = _mm512_maskz_loadu_ps(lo, m < M ? x + k0 : A);
                __m512 v1 = _mm512_maskz_loadu_ps(hi, m < M ? x + k0 + 16 : A);
                _mm512_storeu_si512(t, (__m512i)_mm512_cvtne2ps_pbh(v1, v0));
            }
        }
}

/* pack_a_rows on a bf16 A's values: each block row 32 k of a row, zeros past K and
 * past M */
AVX512BF16 static void pack_a16_rows(int M, int K, const uint16_t *A, int lda, const packed_t *p)
{
    for (int mb = 0; mb < p->mbn; mb++)
        for (int r = 0; r < BLK; r++) {
            const int m = mb * BLK + r;
            const uint16_t *x = A + (size_t)m * lda;
            for (int kb = 0; kb < p->kbn; kb++) {
                uint16_t *t = p->a + ((size_t)mb * p->kbn + kb) * BLK_ELEMS + r * KB;
                const int left = m < M ? K - kb * KB : 0;
                const __mmask32 mask = left >= 32 ? 0xffffffffu : (__mmask32)((1u << (left > 0 ? left : 0)) - 1);
                _mm512_storeu_si512(t, _mm512_maskz_loadu_epi16(mask, left > 0 ? x + kb * KB : A));
            }
        }
}

/* 16 x 16 32-bit elements transposed in registers: r[i] element j <-> r[j] element i. */
AVX512BF16 static void tr16x16_epi32(__m512i r[16])
{
    __m512i t[16];
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
    }
    for (int i = 0; i < 16; i += 4) {
        r[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
        r[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
        r[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
        r[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
    }
    /* each r[i] now holds, in each 128-bit lane L, row (i & ~3) + L's... 4 x 4 blocks left
     * to move between lanes */
    for (int i = 0; i < 4; i++) {
        t[i] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0x88);
        t[i + 4] = _mm512_shuffle_i32x4(r[i], r[i + 4], 0xdd);
        t[i + 8] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0x88);
        t[i + 12] = _mm512_shuffle_i32x4(r[i + 8], r[i + 12], 0xdd);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0x88);
        r[i + 8] = _mm512_shuffle_i32x4(t[i], t[i + 8], 0xdd);
        r[i + 4] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0x88);
        r[i + 12] = _mm512_shuffle_i32x4(t[i + 4], t[i + 12], 0xdd);
    }
}

/* 32 floats of a row from x (cols of them valid, the rest zero) as 16 bf16 pairs */
AVX512BF16 static inline __m512i pairs_of_row(const float *x, int cols)
{
    __mmask16 lo = cols >= 16 ? 0xffff : (__mmask16)((1u << (cols > 0 ? cols : 0)) - 1);
    __mmask16 hi = cols >= 32 ? 0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0;
    __m512 v0 = _mm512_maskz_loadu_ps(lo, cols > 0 ? x : NULL);
    __m512 v1 = _mm512_maskz_loadu_ps(hi, cols > 16 ? x + 16 : NULL);
    return (__m512i)_mm512_cvtne2ps_pbh(v1, v0);
}

/* 16 floats of rows k and k + 1 (each valid where k < K; cols valid) interleaved as pairs */
AVX512BF16 static inline __m512i pairs_of_two_rows(const float *X, size_t ld, int k, int K, int col0, int cols)
{
    const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                           21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    __mmask16 mask = cols >= 16 ? 0xffff : (__mmask16)((1u << (cols > 0 ? cols : 0)) - 1);
    __m512 r0 = _mm512_maskz_loadu_ps(k < K ? mask : 0, k < K ? X + (size_t)k * ld + col0 : NULL);
    __m512 r1 = _mm512_maskz_loadu_ps(k + 1 < K ? mask : 0, k + 1 < K ? X + (size_t)(k + 1) * ld + col0 : NULL);
    return _mm512_permutexvar_epi16(inter, (__m512i)_mm512_cvtne2ps_pbh(r1, r0));
}

/* The packing functions below write column blocks nb0 .. nb1 - 1 of B, block nb at
 * p->b's block nb - nb0 (its k blocks one after another). */
static inline uint16_t *b_block(const packed_t *p, int nb0, int nb, int kb)
{
    return p->b + ((size_t)(nb - nb0) * p->kbn + kb) * BLK_ELEMS;
}

/* The common case of B as stored (k rows of N): rows 2q and 2q + 1 converted together and
 * interleaved into pairs, each pair of rows read once, left to right, for every column
 * block. */
AVX512BF16 static void pack_b_rows(int K, int N, const float *B, int ldb, const packed_t *p, int nb0, int nb1)
{
    const size_t from = (size_t)nb0 * BLK * sizeof(float), to = (size_t)min_int(N, nb1 * BLK) * sizeof(float);
    for (int kb = 0; kb < p->kbn; kb++)
        for (int q = 0; q < KB / 2; q++) {
            prefetch_rows(B, (size_t)ldb * sizeof(float), kb * KB + 2 * q + PACK_ROWS_AHEAD, 2, K, from, to);
            for (int nb = nb0; nb < nb1; nb++)
                _mm512_storeu_si512(b_block(p, nb0, nb, kb) + q * KB,
                                    pairs_of_two_rows(B, (size_t)ldb, kb * KB + 2 * q, K, nb * BLK, N - nb * BLK));
        }
}

/* pack_b_rows on a bf16 B's values: rows 2q and 2q + 1 of a k block interleaved into
 * pairs, 16 columns a block, zeros past K and past N */
AVX512BF16 static void pack_b16_rows(int K, int N, const uint16_t *B, int ldb, const packed_t *p, int nb0, int nb1)
{
    const __m512i inter = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                                           21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const size_t from = (size_t)nb0 * BLK * sizeof(uint16_t), to = (size_t)min_int(N, nb1 * BLK) * sizeof(uint16_t);
    for (int kb = 0; kb < p->kbn; kb++)
        for (int q = 0; q < KB / 2; q++) {
            const int k = kb * KB + 2 * q;
            prefetch_rows(B, (size_t)ldb * sizeof(uint16_t), k + PACK_ROWS_AHEAD, 2, K, from, to);
            for (int nb = nb0; nb < nb1; nb++) {
                const int cols = N - nb * BLK;
                const __mmask16 mask = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
                const __m256i r0 = _mm256_maskz_loadu_epi16(k < K ? mask : 0,
                                                            k < K ? B + (size_t)k * ldb + nb * BLK : B);
                const __m256i r1 = _mm256_maskz_loadu_epi16(k + 1 < K ? mask : 0,
                                                            k + 1 < K ? B + (size_t)(k + 1) * ldb + nb * BLK : B);
                const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(r0), r1, 1);
                _mm512_storeu_si512(b_block(p, nb0, nb, kb) + q * KB, _mm512_permutexvar_epi16(inter, both));
            }
        }
}

/* A stored transposed (K rows of M): a block's 16 k pairs of 16 rows, transposed; the 32
 * stored rows of a k block read once, left to right, for every row block. */
AVX512BF16 static void pack_a_cols(int M, int K, const float *A, int lda, const packed_t *p)
{
    for (int kb = 0; kb < p->kbn; kb++)
        for (int mb = 0; mb < p->mbn; mb++) {
            __m512i r[16];
            for (int q = 0; q < 16; q++)
                r[q] = pairs_of_two_rows(A, (size_t)lda, kb * KB + 2 * q, K, mb * BLK, M - mb * BLK);
            tr16x16_epi32(r);
            uint16_t *t = p->a + ((size_t)mb * p->kbn + kb) * BLK_ELEMS;
            for (int q = 0; q < 16; q++) _mm512_storeu_si512(t + q * KB, r[q]);
        }
}

/* 32 bf16 of a row from x (cols of them valid, the rest zero): 16 pairs as stored */
AVX512BF16 static inline __m512i pairs_of_row16(const uint16_t *x, int cols)
{
    const __mmask32 m = cols >= 32 ? 0xffffffffu : (__mmask32)((1u << (cols > 0 ? cols : 0)) - 1);
    return _mm512_maskz_loadu_epi16(m, cols > 0 ? x : NULL);
}

/* B stored transposed (N rows of K), float32 B or bf16 B16 (where B is NULL): 32 k of a
 * row are 16 pairs (converted, or as stored: the same blocks from the same values); 16
 * rows transposed. */
AVX512BF16 static void pack_cols(int K, int N, const float *B, const uint16_t *B16, int ldb, const packed_t *p, int nb0,
                                 int nb1)
{
    for (int nb = nb0; nb < nb1; nb++)
        for (int kb = 0; kb < p->kbn; kb++) {
            __m512i r[16];
            for (int j = 0; j < 16; j++) {
                const int n = nb * BLK + j, cols = K - kb * KB;
                const size_t at = (size_t)n * ldb + kb * KB;
                r[j] = n >= N ? _mm512_setzero_si512()
                       : B    ? pairs_of_row(B + at, cols)
                              : pairs_of_row16(B16 + at, cols);
            }
            tr16x16_epi32(r);
            uint16_t *t = b_block(p, nb0, nb, kb);
            for (int q = 0; q < 16; q++) _mm512_storeu_si512(t + q * KB, r[q]);
        }
}

void gemm_bf16_pack_b16_cols(int K, int N, const uint16_t *B, int ldb, const packed_t *p)
{
    pack_cols(K, N, NULL, B, ldb, p, 0, p->nbn);
}

/* Column blocks nb0 .. nb1 - 1 of op(B) (p->K x p->N) stored as b */
static void pack_b_blocks(const gemm_bf16_opnd_t *b, const packed_t *p, int nb0, int nb1)
{
    if (b->t) pack_cols(p->K, p->N, b->h ? NULL : b->f, b->h, b->ld, p, nb0, nb1);
    else if (b->h) pack_b16_rows(p->K, p->N, b->h, b->ld, p, nb0, nb1);
    else pack_b_rows(p->K, p->N, b->f, b->ld, p, nb0, nb1);
}

/* ---- kept operands: a weight packed once for every product until it changes ------------ */

typedef struct {
    const float *B; /* the key: the operand, its transposition, shape and stride */
    int tb, K, N, ldb;
    int valid; /* packed since the last gemm_bf16_forget */
    buf_t packed;
} kept_t;

#define KEPT_MAX 1024 /* operands kept at once: a GPT-2 124M step keeps 2 per Linear, 98 */

static kept_t kept[KEPT_MAX];
static int nkept;
/* 1 (training): the last operand kept only, its buffer reused for the next, since a step
 * reads each weight once per layout and keeping them all would add 4 bytes a weight
 * (and on one thread none: each product packs its chunks as it goes, gemm_bf16_keep_b);
 * KEPT_MAX (generation, whose weights are read for every token) all of them */
static int keep_slots = 1;

void gemm_bf16_keep_all(int all)
{
    gemm_bf16_forget();
    keep_slots = all ? KEPT_MAX : 1;
}

static kept_t *kept_find(const float *B, int tb, int K, int N, int ldb)
{
    for (int i = 0; i < nkept; i++)
        if (kept[i].B == B && kept[i].tb == tb && kept[i].K == K && kept[i].N == N && kept[i].ldb == ldb)
            return &kept[i];
    return NULL;
}

static void block_counts(int M, int N, int K, packed_t *p)
{
    *p = (packed_t){.kbn = (K + KB - 1) / KB, .mbn = (M + BLK - 1) / BLK, .nbn = (N + BLK - 1) / BLK, .K = K, .N = N};
}

/* Column blocks in chunks whose packed B (32 x K bytes a block) takes at most B_CHUNK_BYTES,
 * an even count from 2 to NB_CHUNK: that B stays in the L2 cache, beside the rows of A
 * passing, for every row of A; each 8 rows of A (16 x K bytes) serve the whole chunk from
 * the L1 or L2; and C is written 8 rows x the chunk's columns at a time rather than 32
 * columns down all of M. The AMX loop takes NB_CHUNK blocks. */
#define B_CHUNK_BYTES (512 << 10)

static int chunk_blocks(cpu_isa_t isa, int kbn)
{
    if (isa == CPU_ISA_AMX) return NB_CHUNK;
    /* a column block's packed B: kbn blocks of BLK_ELEMS bf16 */
    const size_t per_block = (size_t)kbn * BLK_ELEMS * sizeof(uint16_t), pairs = B_CHUNK_BYTES / (2 * per_block);
    return pairs >= NB_CHUNK / 2 ? NB_CHUNK : pairs > 0 ? 2 * (int)pairs : 2;
}

int gemm_bf16_keep_b(int tb, int K, int N, const float *B, int ldb)
{
    if (cpu_isa() == CPU_ISA_PORTABLE || K <= 0 || N <= 0) return 0; /* the portable path packs nothing */
    /* one thread, one product per weight and layout: its chunks are packed as it runs */
    if (keep_slots == 1 && par_threads() == 1) return 0;
    kept_t *k = kept_find(B, tb, K, N, ldb);
    if (k && k->valid) return 0;
    if (!k) {
        if (nkept >= keep_slots && keep_slots > 1) return -1;
        /* one slot: the last operand's, its buffer kept */
        k = nkept >= keep_slots ? &kept[0] : &kept[nkept++];
        buf_t packed = k->packed;
        *k = (kept_t){.B = B, .tb = tb, .K = K, .N = N, .ldb = ldb, .packed = packed};
    }
    packed_t p;
    block_counts(1, N, K, &p);
    p.b = grow(&k->packed, (size_t)p.nbn * p.kbn * BLK_ELEMS * sizeof(uint16_t));
    if (!p.b) return -1;
    const gemm_bf16_opnd_t b = {.f = B, .t = tb, .ld = ldb};
    pack_b_blocks(&b, &p, 0, p.nbn);
    k->valid = 1;
    return 0;
}

void gemm_bf16_forget(void)
{
    for (int i = 0; i < nkept; i++) kept[i].valid = 0;
}

void *gemm_bf16_scratch(int which, size_t bytes)
{
    scratch_t *sc = scratch();
    return grow(sc ? (which == 2 ? &sc->c : which ? &sc->b : &sc->a) : NULL, bytes);
}

size_t gemm_bf16_scratch_held(int which)
{
    scratch_t *sc = scratch();
    return !sc ? 0 : which == 2 ? sc->c.cap : which ? sc->b.cap : sc->a.cap;
}

/* p->a from float32 op(A) (M, K), into this thread's scratch: 0, or -1 (out of memory) */
static int pack_a(int ta, int M, int K, const float *A, int lda, packed_t *p)
{
    p->a = gemm_bf16_scratch(0, (size_t)p->mbn * p->kbn * BLK_ELEMS * sizeof(uint16_t));
    if (!p->a) return -1;
    if (ta) pack_a_cols(M, K, A, lda, p);
    else pack_a_rows(M, K, A, lda, p);
    return 0;
}

/* p->b from op(B) (K, N) stored as b (float32 or bf16): the kept packing of a float32 B
 * (gemm_bf16_keep_b), or this thread's scratch for one chunk, packed as the products on
 * path isa reach it (p->bsrc = b, which must outlive the product); 0, or -1 (out of
 * memory). */
static int pack_b(cpu_isa_t isa, const gemm_bf16_opnd_t *b, int K, int N, packed_t *p)
{
    p->bsrc = NULL;
    p->nb0 = 0;
    const kept_t *k = b->h ? NULL : kept_find(b->f, b->t, K, N, b->ld);
    if (k && k->valid) {
        p->b = k->packed.p;
        return 0;
    }
    const int chunk = min_int(chunk_blocks(isa, p->kbn), p->nbn);
    p->b = gemm_bf16_scratch(1, (size_t)chunk * p->kbn * BLK_ELEMS * sizeof(uint16_t));
    if (!p->b) return -1;
    p->bsrc = b;
    return 0;
}

/* q (a copy of the product's p) ready for column blocks nc .. : with B packed as the
 * products go, that chunk's blocks packed into the scratch */
static void chunk_at(packed_t *q, int nc, int chunk)
{
    if (!q->bsrc) return;
    pack_b_blocks(q->bsrc, q, nc, min_int(q->nbn, nc + chunk));
    q->nb0 = nc;
}

typedef gemm_bf16_epilogue_t epilogue_t;

/* The results v (lanes m) of C's row r from column n on, stored as e says: as they are, or
 * rounded to bf16 (into c16, or widened back into C) */
AVX512BF16 static inline void put(const epilogue_t *e, __m512 v, __mmask16 m, float *C, int ldc, size_t r, int n)
{
    if (!e->round) {
        _mm512_mask_storeu_ps(C + r * ldc + n, m, v);
        return;
    }
    const __m256i h = (__m256i)_mm512_cvtneps_pbh(v);
    if (e->c16) _mm256_mask_storeu_epi16(e->c16 + r * ldc + n, m, h);
    else
        _mm512_mask_storeu_ps(C + r * ldc + n, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
}

/* C's rows x cols block at (m0, n0) from the sums acc (row stride ld), by e */
AVX512BF16 static void write_back(const float *acc, int ld, int m0, int n0, int rows, int cols, const epilogue_t *e,
                                  float *C, int ldc)
{
    const __m512 a = _mm512_set1_ps(e->alpha), b = _mm512_set1_ps(e->beta);
    for (int r = 0; r < rows; r++) {
        const float *s = acc + (size_t)r * ld;
        for (int j = 0; j < cols; j += 16) {
            __mmask16 m = cols - j >= 16 ? 0xffff : (__mmask16)((1u << (cols - j)) - 1);
            __m512 v = _mm512_mul_ps(a, _mm512_maskz_loadu_ps(m, s + j));
            /* two roundings, as the scalar alpha * s + beta * c: no fused multiply-add */
            if (e->bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, e->bias + n0 + j));
            else if (e->beta != 0.0f)
                v = _mm512_add_ps(v, _mm512_mul_ps(b, _mm512_maskz_loadu_ps(m, C + (size_t)(m0 + r) * ldc + n0 + j)));
            put(e, v, m, C, ldc, (size_t)(m0 + r), n0 + j);
        }
    }
}

/* ---- AVX512-BF16: 8 rows x 32 columns, 16 accumulators, two B rows a step -------------- */

/* The 8 x 32 sums s0 (columns n0 .. n0 + 15) and s1 (n0 + 16 ..) written into C's rows x
 * cols at (m0, n0) by e, from the registers: write_back's operations in its order, so the
 * same bits. */
AVX512BF16 static inline void store_8x32(const __m512 s0[8], const __m512 s1[8], int m0, int n0, int rows, int cols,
                                         const epilogue_t *e, float *C, int ldc)
{
    const __m512 a = _mm512_set1_ps(e->alpha), b = _mm512_set1_ps(e->beta);
    const __mmask16 k0 = cols >= 16 ? 0xffff : (__mmask16)((1u << cols) - 1);
    const __mmask16 k1 = cols >= 32 ? 0xffff : cols > 16 ? (__mmask16)((1u << (cols - 16)) - 1) : 0;
    __m512 bias0 = _mm512_setzero_ps(), bias1 = bias0;
    if (e->bias) {
        bias0 = _mm512_maskz_loadu_ps(k0, e->bias + n0);
        bias1 = _mm512_maskz_loadu_ps(k1, e->bias + n0 + 16);
    }
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) {
        if (r >= rows) break;
        __m512 v0 = _mm512_mul_ps(a, s0[r]), v1 = _mm512_mul_ps(a, s1[r]);
        if (e->bias) {
            v0 = _mm512_add_ps(v0, bias0);
            v1 = _mm512_add_ps(v1, bias1);
        } else if (e->beta != 0.0f) {
            const float *c = C + (size_t)(m0 + r) * ldc + n0;
            v0 = _mm512_add_ps(v0, _mm512_mul_ps(b, _mm512_maskz_loadu_ps(k0, c)));
            v1 = _mm512_add_ps(v1, _mm512_mul_ps(b, _mm512_maskz_loadu_ps(k1, c + 16)));
        }
        put(e, v0, k0, C, ldc, (size_t)(m0 + r), n0);
        put(e, v1, k1, C, ldc, (size_t)(m0 + r), n0 + 16);
    }
}

/* Rows h * 8 .. h * 8 + 7 of row block mb against column blocks nb and nb + 1 (two: one
 * when nb is the last), each output one float32 sum in k order, two products at a time as
 * vdpbf16ps adds them; 8 broadcasts of A serve 2 loads of B. The sums go into C's rows x
 * cols at (m0, n0), whose lines are fetched for writing first: the stores then find them
 * in cache, their fetch hidden behind the K loop's products. */
AVX512BF16 static void avx512_bf16_8x32(const packed_t *p, int mb, int h, int nb, int rows, int cols,
                                        const epilogue_t *e, float *C, int ldc)
{
    const int m0 = mb * BLK + h * 8, n0 = nb * BLK, two = cols > BLK;
    for (int r = 0; r < rows; r++)
        if (e->c16) {
            __builtin_prefetch(e->c16 + (size_t)(m0 + r) * ldc + n0, 1, 3);
        } else {
            __builtin_prefetch(C + (size_t)(m0 + r) * ldc + n0, 1, 3);
            __builtin_prefetch(C + (size_t)(m0 + r) * ldc + n0 + cols - 1, 1, 3);
        }
    __m512 s0[8], s1[8];
#pragma GCC unroll 8
    for (int r = 0; r < 8; r++) s0[r] = s1[r] = _mm512_setzero_ps();
    const __m512i zero = _mm512_setzero_si512();
    for (int kb = 0; kb < p->kbn; kb++) {
        const uint16_t *a = p->a + ((size_t)mb * p->kbn + kb) * BLK_ELEMS + h * 8 * KB;
        const uint16_t *b0 = p->b + ((size_t)(nb - p->nb0) * p->kbn + kb) * BLK_ELEMS;
        const uint16_t *b1 = two ? b0 + (size_t)p->kbn * BLK_ELEMS : NULL;
        for (int q = 0; q < KB / 2; q++) {
            __m512bh v0 = (__m512bh)_mm512_loadu_si512(b0 + q * KB);
            __m512bh v1 = (__m512bh)(two ? _mm512_loadu_si512(b1 + q * KB) : zero);
#pragma GCC unroll 8
            for (int r = 0; r < 8; r++) {
                int32_t pair;
                memcpy(&pair, a + r * KB + 2 * q, sizeof pair);
                __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
                s0[r] = _mm512_dpbf16_ps(s0[r], av, v0);
                s1[r] = _mm512_dpbf16_ps(s1[r], av, v1);
            }
        }
    }
    store_8x32(s0, s1, m0, n0, rows, cols, e, C, ldc);
}

/* Column blocks a chunk at a time (chunk_blocks) */
AVX512BF16 static void avx512_bf16(const packed_t *p, int M, int N, const epilogue_t *e, float *C, int ldc)
{
    const int chunk = chunk_blocks(CPU_ISA_AVX512_BF16, p->kbn);
    packed_t q = *p;
    for (int nc = 0; nc < p->nbn; nc += chunk) {
        chunk_at(&q, nc, chunk);
        for (int mb = 0; mb < p->mbn; mb++)
            for (int h = 0; h < 2 && mb * BLK + h * 8 < M; h++)
                for (int nb = nc; nb < min_int(p->nbn, nc + chunk); nb += 2) {
                    const int m0 = mb * BLK + h * 8, n0 = nb * BLK;
                    avx512_bf16_8x32(&q, mb, h, nb, min_int(8, M - m0), min_int(2 * BLK, N - n0), e, C, ldc);
                }
    }
}

/* ---- AMX: 2 x 2 tiles of 16 x 16 outputs, two A and two B tiles a k block ---------------- */

typedef gemm_bf16_tilecfg_t tilecfg_t;

/* Where the AMX loop finds A's tiles (16 rows of 32 k): row block mb's k block kb at
 * a + mb * block + kb * kstep, its rows stride bytes apart. Packed (p->a): block kbn *
 * BLK_ELEMS, kstep BLK_ELEMS, stride 64. A row-major bf16 A as stored (M a multiple of 16,
 * K of 32: no tile reads past it): block 16 * lda, kstep 32, stride 2 * lda. */
typedef struct {
    const uint16_t *a;
    size_t block, kstep, stride;
} a_tiles_t;

/* One block of up to 2 x 2 tiles at row block mb and column block nb: two_m and two_n say
 * whether the second row and column blocks exist (a product of 16 rows runs 1 x 2). A's
 * tiles from a, wherever they lie: the same tiles give the same bits. */
AMX static inline void amx_block(const a_tiles_t *a, const packed_t *p, int mb, int nb, int two_m, int two_n,
                                 float *acc, int ld)
{
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    const uint16_t *a0 = a->a + (size_t)mb * a->block, *a1 = a0 + a->block;
    const uint16_t *b0 = p->b + (size_t)(nb - p->nb0) * p->kbn * BLK_ELEMS, *b1 = b0 + (size_t)p->kbn * BLK_ELEMS;
    const size_t as = a->stride;
    if (two_m && two_n)
        for (int kb = 0; kb < p->kbn; kb++) {
            const size_t o = (size_t)kb * BLK_ELEMS, ao = (size_t)kb * a->kstep;
            _tile_loadd(4, a0 + ao, as);
            _tile_loadd(5, a1 + ao, as);
            _tile_loadd(6, b0 + o, 64);
            _tile_loadd(7, b1 + o, 64);
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    else
        for (int kb = 0; kb < p->kbn; kb++) {
            const size_t o = (size_t)kb * BLK_ELEMS, ao = (size_t)kb * a->kstep;
            _tile_loadd(4, a0 + ao, as);
            _tile_loadd(6, b0 + o, 64);
            _tile_dpbf16ps(0, 4, 6);
            if (two_n) {
                _tile_loadd(7, b1 + o, 64);
                _tile_dpbf16ps(1, 4, 7);
            }
            if (two_m) {
                _tile_loadd(5, a1 + ao, as);
                _tile_dpbf16ps(2, 5, 6);
            }
        }
    _tile_stored(0, acc, ld * 4);
    _tile_stored(1, acc + BLK, ld * 4);
    _tile_stored(2, acc + BLK * ld, ld * 4);
    _tile_stored(3, acc + BLK * ld + BLK, ld * 4);
}

/* C (M, N) on the AMX path (which the CPU must have) from A's tiles at a and p's packed B:
 * for each output tile the same tdpbf16ps of the same tiles in the same k order and the
 * same write-back wherever A's tiles lie, hence the same bits. */
AMX static void run_amx(const a_tiles_t *a, const packed_t *p, int M, int N, const epilogue_t *e, float *C, int ldc)
{
    tilecfg_t cfg = {.palette = 1};
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
    float acc[2 * BLK * 2 * BLK] __attribute__((aligned(64)));
    const int ld = 2 * BLK, direct = e->alpha == 1.0f && e->beta == 0.0f && !e->bias && !e->round;
    const int chunk = chunk_blocks(CPU_ISA_AMX, p->kbn);
    packed_t q = *p;
    for (int nc = 0; nc < p->nbn; nc += chunk) {
        chunk_at(&q, nc, chunk);
        for (int mb = 0; mb < p->mbn; mb += 2)
            for (int nb = nc; nb < min_int(p->nbn, nc + chunk); nb += 2) {
                const int rows = min_int(2 * BLK, M - mb * BLK), cols = min_int(2 * BLK, N - nb * BLK);
                float *c = C + (size_t)mb * BLK * ldc + (size_t)nb * BLK;
                /* C = 1 * sums: the tiles stored where they go (write_back's 1 * s is s) */
                if (direct && rows == 2 * BLK && cols == 2 * BLK) {
                    amx_block(a, &q, mb, nb, 1, 1, c, ldc);
                    continue;
                }
                amx_block(a, &q, mb, nb, mb + 1 < p->mbn, nb + 1 < p->nbn, acc, ld);
                write_back(acc, ld, mb * BLK, nb * BLK, rows, cols, e, C, ldc);
            }
    }
    _tile_release();
}

/* ---- AMX on A as stored ------------------------------------------------------------------ */

/* The AMX loop (run_amx) with A's tiles loaded straight from the
 * row-major bf16 A (16 rows of 32 k, its row stride apart): no pass packing it. Each
 * output tile takes the same tdpbf16ps of the same tiles in the same k order as on packed
 * A (its tiles are the packed blocks' bytes), and the same write-back, so the same bits.
 * For M a multiple of 16 and K of 32 (whole tiles: nothing past A is read) and N up to
 * AMX_ROWS_MAX_N; A is packed otherwise. */

/* The widest product that loads A's tiles as stored: each A tile is loaded once per pair
 * of column blocks, and from rows a row stride apart (16 cache lines a tile) that costs
 * more than from a packed block, which a packing pass over A buys once. One thread, AMX,
 * thread CPU time, the weight kept, one run on a loaded 2-vCPU VM: A as stored 0.83-0.97x
 * the float32 pack's time at N = 384 to 768 (K = 128, 3072), 1.09-1.15x at N = 2304 and
 * 3072 (K = 768), where the bf16 pack took 0.99-1.01x. */
#define AMX_ROWS_MAX_N 1024

/* ---- the products on the units: one, or a large one in pieces ---------------------------- */

/* The packed A a product holds at most, in bytes: a larger one (a GPT-2 head's gradients,
 * 50257 x 256 tokens: 25.7 MB of scratch, held for the process) runs in pieces. By rows
 * where B is small enough to pack again for each piece: each row's sums are the same
 * blocks' in the same order, the same bits. Otherwise by k: each piece's sums in
 * registers, added into C in k order (C = alpha S1 + beta C, then C = alpha Si + C):
 * a sum of K products and at most K / 32 partial sums, within gamma(K + K / 32 + 2). */
#define UNITS_A_MAX (4 << 20)

static void run_packed(cpu_isa_t isa, const packed_t *p, int M, int N, const epilogue_t *e, float *C, int ldc);

/* The AMX loop reads a bf16 A's tiles as stored (whole tiles, a narrow enough product) */
static int a_as_stored(cpu_isa_t isa, const gemm_bf16_opnd_t *a, int M, int N, int K)
{
    return a->h && isa == CPU_ISA_AMX && M % BLK == 0 && K % KB == 0 && N <= AMX_ROWS_MAX_N;
}

/* p->a from A (float32, or bf16 as stored, row-major): 0, or -1 without scratch */
static int pack_a_any(const gemm_bf16_opnd_t *a, int M, int K, packed_t *p)
{
    if (!a->h) return pack_a(a->t, M, K, a->f, a->ld, p);
    p->a = gemm_bf16_scratch(0, (size_t)p->mbn * p->kbn * BLK_ELEMS * sizeof(uint16_t));
    if (p->a) pack_a16_rows(M, K, a->h, a->ld, p);
    return p->a ? 0 : -1;
}

/* One product on the bf16 units' path isa, by e: 0, or -1 without scratch (then nothing is
 * written) */
static int units_once(cpu_isa_t isa, const gemm_bf16_opnd_t *a, const gemm_bf16_opnd_t *b, int M, int N, int K,
                      const epilogue_t *e, float *C, int ldc)
{
    packed_t p;
    block_counts(M, N, K, &p);
    if (a_as_stored(isa, a, M, N, K)) {
        if (pack_b(isa, b, K, N, &p) != 0) return -1;
        const a_tiles_t at = {.a = a->h,
                              .block = (size_t)BLK * a->ld,
                              .kstep = KB,
                              .stride = (size_t)a->ld * sizeof(uint16_t)};
        run_amx(&at, &p, M, N, e, C, ldc);
        return 0;
    }
    if (pack_a_any(a, M, K, &p) != 0 || pack_b(isa, b, K, N, &p) != 0) return -1;
    run_packed(isa, &p, M, N, e, C, ldc);
    return 0;
}

/* op(X) from row r and column c on */
static gemm_bf16_opnd_t opnd_at(const gemm_bf16_opnd_t *x, int r, int c)
{
    const size_t at = x->t ? (size_t)c * x->ld + r : (size_t)r * x->ld + c;
    gemm_bf16_opnd_t o = *x;
    if (o.h) o.h += at;
    else o.f += at;
    return o;
}

/* The pieces run one after another, each needing the scratch of the first (the same or
 * less), so only the first can fail, before anything is written. */
int gemm_bf16_units(cpu_isa_t isa, const gemm_bf16_opnd_t *a, const gemm_bf16_opnd_t *b, int M, int N, int K,
                    const epilogue_t *e, float *C, int ldc)
{
    const size_t block_bytes = BLK_ELEMS * sizeof(uint16_t), kbn = ((size_t)K + KB - 1) / KB;
    const size_t a_bytes = ((size_t)M + BLK - 1) / BLK * kbn * block_bytes;
    const size_t b_bytes = ((size_t)N + BLK - 1) / BLK * kbn * block_bytes;
    if (a_bytes <= UNITS_A_MAX || a_as_stored(isa, a, M, N, K)) return units_once(isa, a, b, M, N, K, e, C, ldc);
    if (b_bytes <= UNITS_A_MAX || e->round) { /* by rows: the same bits */
        const size_t fit = UNITS_A_MAX / (kbn * block_bytes) * BLK;
        const int rows = fit < BLK ? BLK : (int)fit;
        for (int m = 0; m < M; m += rows) {
            const gemm_bf16_opnd_t ap = opnd_at(a, m, 0);
            epilogue_t ep = *e;
            if (ep.c16) ep.c16 += (size_t)m * ldc;
            float *c = C ? C + (size_t)m * ldc : NULL; /* C is NULL where the results go to c16 */
            if (units_once(isa, &ap, b, min_int(rows, M - m), N, K, &ep, c, ldc) != 0) return -1;
        }
        return 0;
    }
    const size_t fit = UNITS_A_MAX / (((size_t)M + BLK - 1) / BLK * block_bytes) * KB; /* by k */
    const int ks = fit < KB ? KB : (int)fit;
    for (int k = 0; k < K; k += ks) {
        const gemm_bf16_opnd_t ap = opnd_at(a, 0, k), bp = opnd_at(b, k, 0);
        const epilogue_t first = *e, then = {.alpha = e->alpha, .beta = 1.0f};
        if (units_once(isa, &ap, &bp, M, N, min_int(ks, K - k), k ? &then : &first, C, ldc) != 0) return -1;
    }
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------------------- */

void gemm_bf16_fill_bias(int M, int N, const float *bias, float *C, int ldc)
{
    for (int m = 0; m < M; m++) memcpy(C + (size_t)m * ldc, bias, (size_t)N * sizeof(float));
}

int gemm_bf16_start(cpu_isa_t isa, int M, int N, int K, const float *bias, float *beta, float *C, int ldc)
{
    if (bias && (K <= 0 || isa == CPU_ISA_PORTABLE)) gemm_bf16_fill_bias(M, N, bias, C, ldc), *beta = 1.0f;
    if (K > 0) return 0;
    /* no products: alpha * 0 + beta * C, as a BLAS */
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float *c = C + (size_t)m * ldc + n;
            *c = *beta == 0.0f ? 0.0f : *beta * *c;
        }
    return 1;
}

static void run_on(cpu_isa_t isa, int ta, int tb, int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                   const epilogue_t *e, float *C, int ldc)
{
    if (M <= 0 || N <= 0) return;
    float beta = e->beta;
    if (isa > cpu_isa_available()) isa = cpu_isa_available();
    if (gemm_bf16_start(isa, M, N, K, e->bias, &beta, C, ldc)) return;
    if (isa == CPU_ISA_PORTABLE) {
        portable(ta, tb, M, N, K, e->alpha, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    const gemm_bf16_opnd_t a = {.f = A, .t = ta, .ld = lda}, b = {.f = B, .t = tb, .ld = ldb};
    if (gemm_bf16_units(isa, &a, &b, M, N, K, e, C, ldc) != 0) {
        if (e->bias) gemm_bf16_fill_bias(M, N, e->bias, C, ldc), beta = 1.0f;
        direct(ta, tb, M, N, K, e->alpha, A, lda, B, ldb, beta, C, ldc);
    }
}

/* C (M, N) from the packed operands on path isa (AVX512-BF16 or AMX, which the CPU has) */
static void run_packed(cpu_isa_t isa, const packed_t *p, int M, int N, const epilogue_t *e, float *C, int ldc)
{
    if (isa != CPU_ISA_AMX) {
        avx512_bf16(p, M, N, e, C, ldc);
        return;
    }
    /* the packed blocks: row block mb's k block kb at (mb * kbn + kb) * BLK_ELEMS */
    const a_tiles_t a = {.a = p->a, .block = (size_t)p->kbn * BLK_ELEMS, .kstep = BLK_ELEMS, .stride = 64};
    run_amx(&a, p, M, N, e, C, ldc);
}

void gemm_bf16_on(cpu_isa_t isa, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                  const float *B, int ldb, float beta, float *C, int ldc)
{
    const epilogue_t e = {.alpha = alpha, .beta = beta};
    run_on(isa, ta, tb, M, N, K, A, lda, B, ldb, &e, C, ldc);
}

void gemm_bf16(int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb,
               float beta, float *C, int ldc)
{
    gemm_bf16_on(cpu_isa(), ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

void gemm_bf16_bias_on(cpu_isa_t isa, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
                       const float *B, int ldb, const float *bias, float *C, int ldc)
{
    const epilogue_t e = {.alpha = alpha, .beta = 0.0f, .bias = bias};
    run_on(isa, ta, tb, M, N, K, A, lda, B, ldb, &e, C, ldc);
}
