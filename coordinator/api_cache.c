/* coordinator/api_cache.c - see api_cache.h. */
#include "api_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobstore.h"
#include "hash.h"

#define SUMMARY_MAX (1 << 20)

/* Reads a small JSON file (the worker's summary) with one read where it can, and parses
 * it; NULL when it is missing, larger than SUMMARY_MAX or not JSON. *st is the identity
 * of the file that was read. (json_load_file reads through stdio a byte at a time: half
 * again the time of parsing the same bytes from memory.) */
static json_t *load_json_file(const char *path, struct stat *st)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    json_t *j = NULL;
    char *buf = NULL;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) || st->st_size > SUMMARY_MAX) goto out;
    /* One byte more than fstat said, so one read() normally sees the whole file and its
     * end; a file that grows meanwhile (a running job rewriting it) is read to its end. */
    size_t cap = (size_t)st->st_size + 1, n = 0;
    if (!(buf = malloc(cap))) goto out;
    for (;;) {
        if (n == cap) {
            if (cap > SUMMARY_MAX) goto out;
            char *bigger = realloc(buf, 2 * cap);
            if (!bigger) goto out;
            buf = bigger;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + n, cap - n);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) goto out;
        if (k == 0) break;
        n += (size_t)k;
    }
    if (n <= SUMMARY_MAX) j = json_loadb(buf, n, 0, NULL);
out:
    free(buf);
    close(fd);
    return j;
}

/* ---- parse caches for coord_get (GET /api/v1/jobs/{id}, the API's hottest call): the
 * job's spec and the worker's summary were parsed on every call, a third or more of its
 * CPU time (most of it with a big job's summary).
 * Parsed objects are shared by reference (jansson allows concurrent reads of a value
 * that nobody modifies), so coord_get's callers must not modify "spec" or "summary".
 * Both tables are direct-mapped by a hash of their key (a collision replaces the older
 * entry) and process-wide: keys are job ids checked against the spec text, and absolute
 * paths, so the coordinators of one process (tests) can share them. ---- */

#define SPEC_CACHE_SLOTS 32
#define SPEC_CACHE_TEXT_MAX (64 * 1024) /* larger specs are parsed per call */
#define SUMMARY_CACHE_SLOTS 32
#define SUMMARY_CACHE_FILE_MAX (256 * 1024) /* larger summaries are parsed per call */

/* A spec never changes after submit; an entry is used only when the text in Redis is
 * exactly the one it was parsed from, so it cannot go stale (not even for an id reused
 * after a Redis reset). */
typedef struct {
    char id[JOB_ID_MAX];
    char *text;
    json_t *spec;
} spec_entry_t;

/* A finished job's summary file no longer changes (its processes are gone before the
 * final state is written). An entry is used only while the job is final in Redis and the
 * file is the same one (device, inode, size, mtime, ctime): a job that runs again (its id
 * reused after a Redis reset) is not final while it runs, drops its entry when seen so,
 * and the summary it writes next is another version of the file. */
typedef struct {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime, ctime;
    json_t *summary;
} summary_entry_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static spec_entry_t spec_cache[SPEC_CACHE_SLOTS];
static summary_entry_t summary_cache[SUMMARY_CACHE_SLOTS];

void api_cache_spec_put(const char *id, const char *text, json_t *spec)
{
    if (!id || !text || !spec) return;
    size_t len = strlen(text);
    spec_entry_t *e = &spec_cache[str_hash(id) % SPEC_CACHE_SLOTS];
    if (len > SPEC_CACHE_TEXT_MAX || strlen(id) >= sizeof e->id) return;
    char *copy = malloc(len + 1);
    if (!copy) return;
    memcpy(copy, text, len + 1);
    pthread_mutex_lock(&cache_lock);
    char *old_text = e->text;
    json_t *old = e->spec;
    snprintf(e->id, sizeof e->id, "%s", id);
    e->text = copy;
    e->spec = json_incref(spec);
    pthread_mutex_unlock(&cache_lock);
    free(old_text); /* outside the lock: a big old entry takes a while to free */
    json_decref(old);
}

json_t *api_cache_spec(const char *id, const char *text)
{
    if (!text) return NULL;
    spec_entry_t *e = &spec_cache[str_hash(id) % SPEC_CACHE_SLOTS];
    json_t *j = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->text && strcmp(e->id, id) == 0 && strcmp(e->text, text) == 0) j = json_incref(e->spec);
    pthread_mutex_unlock(&cache_lock);
    if (j) return j;
    if ((j = json_loadb(text, strlen(text), 0, NULL))) api_cache_spec_put(id, text, j);
    return j;
}

static int same_file(const summary_entry_t *e, const struct stat *st)
{
    return e->dev == st->st_dev && e->ino == st->st_ino && e->size == st->st_size &&
           e->mtime.tv_sec == st->st_mtim.tv_sec && e->mtime.tv_nsec == st->st_mtim.tv_nsec &&
           e->ctime.tv_sec == st->st_ctim.tv_sec && e->ctime.tv_nsec == st->st_ctim.tv_nsec;
}

/* Empties the entry of path, if it has one. */
static void summary_forget(const char *path)
{
    summary_entry_t *e = &summary_cache[str_hash(path) % SUMMARY_CACHE_SLOTS];
    char *old_path = NULL;
    json_t *old = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->path && strcmp(e->path, path) == 0) {
        old_path = e->path;
        old = e->summary;
        memset(e, 0, sizeof *e);
    }
    pthread_mutex_unlock(&cache_lock);
    free(old_path);
    json_decref(old);
}

json_t *api_cache_summary(const char *path, int final)
{
    struct stat st;
    if (!path || !*path) return NULL;
    if (!final) {
        summary_forget(path);
        return load_json_file(path, &st);
    }
    if (stat(path, &st) != 0) {
        summary_forget(path);
        return NULL;
    }
    summary_entry_t *e = &summary_cache[str_hash(path) % SUMMARY_CACHE_SLOTS];
    json_t *j = NULL;
    pthread_mutex_lock(&cache_lock);
    if (e->path && strcmp(e->path, path) == 0 && same_file(e, &st)) j = json_incref(e->summary);
    pthread_mutex_unlock(&cache_lock);
    if (j) return j;
    if (!(j = load_json_file(path, &st)) || st.st_size > SUMMARY_CACHE_FILE_MAX) return j;
    char *key = strdup(path);
    if (!key) return j;
    pthread_mutex_lock(&cache_lock);
    char *old_path = e->path;
    json_t *old = e->summary;
    e->path = key;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime = st.st_mtim;
    e->ctime = st.st_ctim;
    e->summary = json_incref(j);
    pthread_mutex_unlock(&cache_lock);
    free(old_path);
    json_decref(old);
    return j;
}
