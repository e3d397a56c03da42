/* sim/simshare.h - the one piece of state every simulated rank shares.
 *
 * SMPI runs all ranks in one process and gives each its own copy of the program's
 * globals (dlopen privatisation: every rank loads a private copy of pacer-worker). That
 * is what keeps the worker's logic unchanged, but it also means a rank cannot see another
 * rank's globals. This table lives in a separate small library, libpacer_simshare.so,
 * which SMPI does not privatise, so every rank sees the same one. It holds only pointers
 * to read-only data (the data sets, sim/sim_worker.c). Ranks of a simulation run one at
 * a time, and the mutex covers any other caller. */
#ifndef PACER_SIM_SIMSHARE_H
#define PACER_SIM_SIMSHARE_H

#define SIMSHARE_MAX 16
#define SIMSHARE_KEY_MAX 1100

/* The value stored under key, or NULL. */
void *simshare_get(const char *key);
/* Stores value under key (NULL removes it). Returns 0, or -1 when the table is full or
 * the key too long. */
int simshare_put(const char *key, void *value);

#endif
