/* Writing the merged model without following links (see merge_out.h). */
#define _GNU_SOURCE
#include "merge_out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/out_file.h"

/* "a symbolic link" and the like, for a path lstat found */
static const char *kind(const struct stat *st) {
    return S_ISLNK(st->st_mode) ? "a symbolic link" : S_ISDIR(st->st_mode) ? "a folder" : "not a regular file";
}

static int refuse_link(const char *path, const struct stat *st, const char *what, char *why, size_t len) {
    snprintf(why, len,
             "%s is %s; merge never writes through a link (it would replace a file elsewhere) nor over %s: "
             "remove it, or name another file with -o",
             path, kind(st), what);
    return -1;
}

int sr__merge_dest_check(const sr__merge_dest *d, const char *const *inputs, int n, char *why, size_t len) {
    struct stat st;
    if (d->folder) {
        if (lstat(d->folder, &st) != 0) {
            if (errno != ENOENT) return snprintf(why, len, "%s: %s", d->folder, strerror(errno)), -1;
            /* created at the end: its parent must take it */
            char *parent = sr__strdup(d->folder), *slash = parent ? strrchr(parent, '/') : NULL;
            if (slash) *slash = 0;
            int ok = parent && access(slash ? parent : ".", W_OK | X_OK) == 0, e = errno;
            if (!ok) snprintf(why, len, "cannot create %s: %s", d->folder, parent ? strerror(e) : "out of memory");
            free(parent);
            return ok ? 0 : -1;
        }
        if (!S_ISDIR(st.st_mode)) return refuse_link(d->folder, &st, "anything but a folder", why, len);
    }
    if (lstat(d->path, &st) == 0 && !S_ISREG(st.st_mode))
        return refuse_link(d->path, &st, "anything but a file", why, len);
    /* the rest as for every output: its folder takes a temporary, it is none of the inputs */
    return sr__out_check(d->path, inputs, n, why, len);
}

/* O_EXCL | O_NOFOLLOW: a name already taken (by a link or anything) is never opened; the next is tried */
static char *make_temp(const char *path) {
    const char *slash = strrchr(path, '/');
    int dl = slash ? (int)(slash - path + 1) : 0;
    for (int k = 0; k < 100; k++) {
        char *tmp = NULL;
        if (asprintf(&tmp, "%.*s.%s.tmp-%ld-%d", dl, path, path + dl, (long)getpid(), k) < 0) return NULL;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0) {
            close(fd);
            return tmp;
        }
        int e = errno;
        free(tmp);
        if (e != EEXIST) return errno = e, NULL;
    }
    return errno = EEXIST, NULL;
}

int sr__merge_dest_write(const sr__merge_dest *d, const sr__st_tensor *t, float *const *vals, size_t n, char *why,
                         size_t len) {
    int made = 0;
    struct stat st;
    if (d->folder) {
        if (mkdir(d->folder, 0777) == 0) made = 1;
        else if (errno != EEXIST) return snprintf(why, len, "cannot create %s: %s", d->folder, strerror(errno)), -1;
        else if (lstat(d->folder, &st) != 0) return snprintf(why, len, "%s: %s", d->folder, strerror(errno)), -1;
        else if (!S_ISDIR(st.st_mode)) /* it changed since the check */
            return refuse_link(d->folder, &st, "anything but a folder", why, len);
    }
    char *tmp = make_temp(d->path), err[1024] = "";
    int ok = tmp != NULL;
    if (!ok) snprintf(err, sizeof err, "cannot create a temporary file beside it: %s", strerror(errno));
    const sr__st_kv meta[] = {{"format", "pt"}};
    sr__st_writer *w = ok ? sr__st_create(tmp, t, n, meta, 1, err, sizeof err) : NULL;
    ok = w != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        size_t bytes = sizeof(float);
        for (int k = 0; k < t[i].ndim; k++) bytes *= (size_t)t[i].shape[k];
        if (sr__st_write(w, i, 0, vals[i], bytes, err, sizeof err) != 0) sr__st_abort(w), w = NULL, ok = 0;
    }
    if (ok && sr__st_finish(w, err, sizeof err) != 0) ok = 0; /* fsync'ed; removed on failure */
    if (ok && lstat(d->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        refuse_link(d->path, &st, "anything but a file", err, sizeof err);
        ok = 0;
    }
    /* rename replaces the name itself: even a link that appeared since is replaced, never its target */
    if (ok && rename(tmp, d->path) != 0) snprintf(err, sizeof err, "renaming %s: %s", tmp, strerror(errno)), ok = 0;
    if (ok) { /* the rename, on disk */
        char *dir = sr__strdup(d->path), *slash = dir ? strrchr(dir, '/') : NULL;
        if (slash) *slash = 0;
        int fd = dir ? open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
        if (fd >= 0) (void)fsync(fd), close(fd);
        free(dir);
    }
    if (!ok) {
        if (tmp) unlink(tmp);
        if (made) rmdir(d->folder);
        snprintf(why, len, "cannot write %s: %s", d->path, err);
    }
    free(tmp);
    return ok ? 0 : -1;
}
