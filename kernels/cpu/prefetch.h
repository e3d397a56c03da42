/* kernels/cpu/prefetch.h - software prefetch for the kernels that stream cold activations
 * through memory: a line PREFETCH_AHEAD floats ahead of a loop (GELU's backward, the layer
 * norms' backward, a linear layer's bias fill), or the next image's share of a batch for
 * the copies that read many planes of one image at once (prefetch_next_share). On the
 * development VMs the hardware prefetchers left these loops waiting on memory: GELU's
 * backward at nanoGPT's CPU shape took 1.35 ms a step, 1.0 with its two cold inputs asked
 * for 4 KiB ahead (layer_profile; 1 KiB ahead gave 1.01). A prefetch never faults, so
 * asking past an array's end is harmless. */
#ifndef PACER_KERNELS_CPU_PREFETCH_H
#define PACER_KERNELS_CPU_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#define PREFETCH_AHEAD 1024 /* floats */

/* where i (a float index stepping by 8 or less) starts a new 64-byte line of p: ask for the
 * line PREFETCH_AHEAD floats on, to read (or, with write, to write) */
static inline void prefetch_ahead(const float *p, size_t i, int write)
{
    if ((i & 15) != 0) return;
    if (write) __builtin_prefetch(p + i + PREFETCH_AHEAD, 1, 3);
    else __builtin_prefetch(p + i + PREFETCH_AHEAD, 0, 3);
}

/* Share i of n of the `bytes` after p, asked for a line at a time: a loop over one image of
 * a batch (bytes long at p) that takes n steps asks at step i for its share of the next
 * image, which is one run after it (NCHW). For loops that read many planes of a cold image
 * at once, more streams than the hardware prefetchers follow: copying a Winograd layer's
 * input channel-last and rounding a direct convolution's into pairs of channels waited on
 * their loads (perf annotate). Past the batch's end the addresses are asked for and never
 * read: a prefetch does not fault. */
static inline void prefetch_next_share(const void *p, size_t bytes, size_t i, size_t n)
{
    const size_t share = (bytes / n + 63) / 64 * 64, o0 = i * share;
    const uintptr_t next = (uintptr_t)p + bytes;
    for (size_t o = o0; o < o0 + share && o < bytes; o += 64) __builtin_prefetch((const void *)(next + o), 0, 3);
}

#endif
