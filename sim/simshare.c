/* sim/simshare.c - see simshare.h. Built as its own shared library (sim/sim.mk): never
 * link it into pacer-worker statically, or SMPI would privatise it with the rest. */
#include "simshare.h"

#include <pthread.h>
#include <string.h>

static struct {
    char key[SIMSHARE_KEY_MAX];
    void *value;
} table[SIMSHARE_MAX];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

void *simshare_get(const char *key)
{
    void *v = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < SIMSHARE_MAX; i++)
        if (table[i].value && strcmp(table[i].key, key) == 0) v = table[i].value;
    pthread_mutex_unlock(&lock);
    return v;
}

int simshare_put(const char *key, void *value)
{
    if (strlen(key) >= SIMSHARE_KEY_MAX) return -1;
    int rc = -1;
    pthread_mutex_lock(&lock);
    int slot = -1;
    for (int i = 0; i < SIMSHARE_MAX; i++) {
        if (table[i].value && strcmp(table[i].key, key) == 0) {
            slot = i;
            break;
        }
        if (!table[i].value && slot < 0) slot = i;
    }
    if (slot >= 0 && (value || table[slot].value)) {
        strcpy(table[slot].key, key);
        table[slot].value = value;
        rc = 0;
    } else if (slot >= 0) {
        rc = 0; /* removing a key that is not there */
    }
    pthread_mutex_unlock(&lock);
    return rc;
}
