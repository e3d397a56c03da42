/* kernels/cpu/cpu_isa.c - see cpu_isa.h. */
#include "cpu_isa.h"

#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Linux's request for an extended state component (arch/x86/include/uapi/asm/prctl.h) and
 * AMX's tile data component: without the grant the first tile instruction faults. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cpu_isa_t available_isa = CPU_ISA_PORTABLE, taken_isa = CPU_ISA_PORTABLE;
static char why_not[160];   /* why available_isa is not the next path up */
static char why_taken[160]; /* why taken_isa is not the next path up */
static char env_error[96];

static const char *const NAMES[CPU_ISA_N] = {"portable", "avx512_bf16", "amx"};

const char *cpu_isa_name(cpu_isa_t isa) { return (unsigned)isa < CPU_ISA_N ? NAMES[isa] : "unknown"; }

int cpu_isa_parse(const char *s, cpu_isa_t *out)
{
    for (int i = 0; s && i < CPU_ISA_N; i++)
        if (strcmp(s, NAMES[i]) == 0) {
            *out = (cpu_isa_t)i;
            return 0;
        }
    return -1;
}

unsigned long long cpu_os_states(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

/* Asked once: cpu_os_states runs cpuid, which a virtual machine's hypervisor traps, and
 * the elementwise kernels that ask are called in chunks of a few thousand elements (asked
 * per call, it took half of a bf16 GPT step at nanoGPT's CPU shape on the development VM:
 * perf). Every thread computes the same answer, so a race only repeats it. */
int cpu_avx512f_usable(void)
{
    static int ok = -1;
    int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
    if (v < 0) {
        v = __builtin_cpu_supports("avx512f") && (cpu_os_states() & CPU_OS_AVX512) == CPU_OS_AVX512;
        __atomic_store_n(&ok, v, __ATOMIC_RELAXED);
    }
    return v;
}

/* The best path by the CPU's flags and the OS's enabled states; why_not says what stops
 * the next one. */
static cpu_isa_t detect(void)
{
    unsigned a, b, c, d;
    const unsigned long long x = cpu_os_states();
    if (!x) {
        snprintf(why_not, sizeof why_not, "the OS does not save the AVX state (no OSXSAVE)");
        return CPU_ISA_PORTABLE;
    }
    const int os_avx512 = (x & CPU_OS_AVX512) == CPU_OS_AVX512;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        snprintf(why_not, sizeof why_not, "the CPU reports no extended features (cpuid leaf 7)");
        return CPU_ISA_PORTABLE;
    }
    int avx512 = (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL) && os_avx512;
    int amx = (d & (1u << 22)) && (d & (1u << 24)); /* amx_bf16, amx_tile */
    unsigned a1 = 0, b1, c1, d1;
    __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
    int bf16 = avx512 && (a1 & (1u << 5));
    if (!bf16) {
        snprintf(why_not, sizeof why_not, "%s",
                 !avx512 ? "the CPU (or the OS) has no AVX-512" : "the CPU has no avx512_bf16");
        return CPU_ISA_PORTABLE;
    }
    if (!amx) {
        snprintf(why_not, sizeof why_not, "the CPU has no amx_bf16 and amx_tile");
        return CPU_ISA_AVX512_BF16;
    }
    if ((x & CPU_OS_AMX) != CPU_OS_AMX) {
        snprintf(why_not, sizeof why_not, "the OS does not enable the AMX tile states (XCR0)");
        return CPU_ISA_AVX512_BF16;
    }
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) != 0) {
        snprintf(why_not, sizeof why_not, "Linux refused the AMX tile state (arch_prctl: %s)", strerror(errno));
        return CPU_ISA_AVX512_BF16;
    }
    why_not[0] = '\0';
    return CPU_ISA_AMX;
}

static void take(cpu_isa_t cap)
{
    if (cap < available_isa) {
        taken_isa = cap;
        snprintf(why_taken, sizeof why_taken, "PACER_CPU_ISA caps it at %s", cpu_isa_name(cap));
    } else {
        taken_isa = available_isa;
        snprintf(why_taken, sizeof why_taken, "%s", why_not);
    }
}

static void init(void)
{
    available_isa = detect();
    cpu_isa_t cap = CPU_ISA_AMX;
    const char *env = getenv("PACER_CPU_ISA");
    if (env && *env && cpu_isa_parse(env, &cap) != 0) {
        snprintf(env_error, sizeof env_error, "PACER_CPU_ISA=%.32s: want portable, avx512_bf16 or amx", env);
        cap = CPU_ISA_PORTABLE;
    }
    take(cap);
}

cpu_isa_t cpu_isa(void)
{
    pthread_once(&once, init);
    return taken_isa;
}

cpu_isa_t cpu_isa_available(void)
{
    pthread_once(&once, init);
    return available_isa;
}

const char *cpu_isa_why(void)
{
    pthread_once(&once, init);
    return why_taken;
}

const char *cpu_isa_env_error(void)
{
    pthread_once(&once, init);
    return env_error[0] ? env_error : NULL;
}

cpu_isa_t cpu_isa_cap(cpu_isa_t cap)
{
    pthread_once(&once, init);
    take(cap);
    return taken_isa;
}
