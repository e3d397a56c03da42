/* coordinator/userdata.c - see userdata.h. */
#include "userdata.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "dsprobe.h"
#include "imgfolder.h"

static int not_hidden(const struct dirent *e) { return e->d_name[0] != '.'; }
static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n > k && strcmp(s + n - k, tail) == 0;
}

/* One entry: what the probe found, or why it could not. */
static json_t *entry_json(const char *name, const char *format, const char *path)
{
    dsprobe_t p;
    char err[1024];
    json_t *e = json_pack("{s:s, s:s, s:s, s:s}", "name", name, "source", "user", "format", format, "path", path);
    if (!e) return NULL;
    if (dsprobe(format, path, "nhwc", &p, err, sizeof err) != 0) {
        json_object_set_new(e, "error", json_string(err));
        return e;
    }
    json_object_set_new(e, "classes", json_integer(p.classes));
    json_object_set_new(e, "train_samples", json_integer(p.ntrain));
    json_object_set_new(e, "test_samples", json_integer(p.ntest));
    /* an .npz's arrays say their image shape; a folder's images only say it decoded */
    json_object_set_new(e, "input", p.C ? json_pack("[iii]", p.C, p.H, p.W) : json_null());
    return e;
}

int userdata_list(const char *const *roots, int nroots, json_t *list)
{
    int added = 0;
    for (int r = 0; r < nroots && added < USERDATA_LIST_MAX; r++) {
        struct dirent **names = NULL;
        int n = scandir(roots[r], &names, not_hidden, by_name);
        for (int i = 0; i < n; i++) {
            char path[PATH_MAX];
            struct stat st;
            const char *format = NULL;
            int len = snprintf(path, sizeof path, "%s/%s", roots[r], names[i]->d_name);
            if (added < USERDATA_LIST_MAX && len > 0 && (size_t)len < sizeof path && stat(path, &st) == 0) {
                if (S_ISDIR(st.st_mode) && imgfolder_detect(path)) format = "imagefolder";
                else if (S_ISREG(st.st_mode) && ends_with(names[i]->d_name, ".npz")) format = "npz";
            }
            json_t *e = format ? entry_json(names[i]->d_name, format, path) : NULL;
            if (e && json_array_append_new(list, e) == 0) added++;
            free(names[i]);
        }
        free(names);
    }
    return added;
}
