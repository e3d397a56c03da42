/* kernels/cpu/cpu_isa.h - which matrix units the bf16 products run on.
 *
 * The bf16 products (gemm_bf16.h) have three paths, each computing the same products of
 * bf16 operands with fp32 sums, in other orders:
 *   CPU_ISA_PORTABLE     fp32 FMAs (OpenBLAS) on operands rounded to bf16: any x86-64;
 *   CPU_ISA_AVX512_BF16  vdpbf16ps (AVX512-BF16: Cooper Lake, Sapphire Rapids, Zen 4);
 *   CPU_ISA_AMX          AMX tiles' tdpbf16ps (Sapphire Rapids and later), after Linux
 *                        has granted the process the tile data state (arch_prctl).
 * Best is by the units, not measured: on the AMX Xeon measured (a VM's family 6 model
 * 167) vdpbf16ps issues every other cycle, half the GFLOP/s of its fp32 FMAs
 * (bench/gemm_bf16 --peak), so where AMX is refused or capped there the AVX512-BF16 path
 * runs slower than the portable one (docs/PERFORMANCE.md); a Zen 4, which issues one
 * 512-bit vdpbf16ps or FMA a cycle, would have twice the FMAs' rate (not measured).
 * The best path the CPU, the operating system and the cap allow is chosen once, from the
 * CPU's own feature flags (cpuid, xgetbv), not from its model. PACER_CPU_ISA=portable |
 * avx512_bf16 | amx caps the choice (tests and benchmarks run each path by it); a cap
 * above what the CPU has runs the best it has, and cpu_isa_why says why. */
#ifndef PACER_CPU_ISA_H
#define PACER_CPU_ISA_H

typedef enum { CPU_ISA_PORTABLE = 0, CPU_ISA_AVX512_BF16 = 1, CPU_ISA_AMX = 2 } cpu_isa_t;

#define CPU_ISA_N 3

/* The path the bf16 products take: the best one available under the cap. */
cpu_isa_t cpu_isa(void);
/* The best one available with no cap (the CPU's flags, the OS's states, AMX's permission). */
cpu_isa_t cpu_isa_available(void);
/* "portable", "avx512_bf16", "amx": PACER_CPU_ISA's spelling. */
const char *cpu_isa_name(cpu_isa_t isa);
/* Why cpu_isa() is not the next path up ("the CPU has no amx_bf16", "PACER_CPU_ISA caps
 * it", "Linux refused the AMX tile state: ..."), or "" at AMX. */
const char *cpu_isa_why(void);
/* PACER_CPU_ISA's value when it names no path (the caller refuses to start, naming it),
 * else NULL. */
const char *cpu_isa_env_error(void);
/* Caps the path (tests: each path in turn); returns the path now taken. The cap stays
 * until the next call. Not while a product runs. */
cpu_isa_t cpu_isa_cap(cpu_isa_t cap);
/* The register states the OS saves (XCR0), 0 where it saves none (no OSXSAVE): the
 * vector units are usable only with their states, whatever cpuid says. */
unsigned long long cpu_os_states(void);
#define CPU_OS_AVX 0x6ull       /* SSE and AVX */
#define CPU_OS_AVX512 0xe6ull   /* and the opmask, the upper ZMM halves, ZMM16-31 */
#define CPU_OS_AMX (3ull << 17) /* the tile configuration and data */

/* Whether the CPU has AVX-512F and the OS saves its states (the elementwise kernels'
 * sixteen lanes: GELU, the causal softmax); asked of the CPU once. */
int cpu_avx512f_usable(void);

/* Parses PACER_CPU_ISA's spelling; 0, or -1 for none of them. */
int cpu_isa_parse(const char *s, cpu_isa_t *out);

#endif
