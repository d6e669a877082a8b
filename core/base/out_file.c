/* out_file: writing a user-named output without destroying anything (see out_file.h). */
#define _GNU_SOURCE
#include "base/out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fail.h"

typedef enum out_kind {
    OUT_NEW,     /* nothing there yet: created through a temporary */
    OUT_REGULAR, /* a regular file: replaced through a temporary */
    OUT_OWN_FD,  /* one of this process's descriptors (/dev/stdout, /proc/self/fd/N): written through a dup */
    OUT_IN_PLACE /* a character device, FIFO, socket or another /proc file: opened and written */
} out_kind;

typedef struct resolved {
    out_kind kind;
    char *target; /* the canonical path at the end of the links */
    int fd;       /* OUT_OWN_FD */
    mode_t mode;  /* OUT_REGULAR: its permissions */
} resolved;

/* "/proc/<this pid>/fd/N" or "/proc/<this pid>/task/<tid>/fd/N": N, else -1 */
static int own_fd(const char *canon) {
    char pid[32];
    snprintf(pid, sizeof pid, "/proc/%d/", (int)getpid());
    if (strncmp(canon, pid, strlen(pid))) return -1;
    const char *p = canon + strlen(pid);
    if (!strncmp(p, "task/", 5)) {
        p += 5;
        while (*p >= '0' && *p <= '9') p++;
        if (*p++ != '/') return -1;
    }
    if (strncmp(p, "fd/", 3) || !p[3]) return -1;
    char *end;
    long n = strtol(p + 3, &end, 10);
    return *end || n < 0 || n > INT_MAX ? -1 : (int)n;
}

/* The folder part of cur made canonical, joined with its last component: *out (malloc'd). */
static int canonical(const char *path, const char *cur, char **out, char *why, size_t len) {
    const char *slash = strrchr(cur, '/');
    char *dir = slash ? sr__strndup(cur, slash == cur ? 1 : (size_t)(slash - cur)) : sr__strdup(".");
    const char *base = slash ? slash + 1 : cur;
    char *real = dir ? realpath(dir, NULL) : NULL;
    int e = errno;
    if (!real) {
        int rc = !dir           ? sr__fail(why, len, "%s: out of memory", path)
                 : e == ENOENT  ? sr__fail(why, len, "%s: the folder %s does not exist; create it first", path, dir)
                 : e == ENOTDIR ? sr__fail(why, len, "%s: %s is not a folder", path, dir)
                                : sr__fail(why, len, "%s: cannot reach the folder %s: %s", path, dir, strerror(e));
        free(dir);
        return rc;
    }
    free(dir);
    *out = sr__fmt("%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
    free(real);
    return *out ? 0 : sr__fail(why, len, "%s: out of memory", path);
}

/* Follows path's symbolic links to what will be written. */
static int resolve(const char *path, resolved *r, char *why, size_t len) {
    *r = (resolved){.fd = -1};
    if (!path || !*path) return sr__fail(why, len, "an empty file name; name the file to write");
    if (path[strlen(path) - 1] == '/') return sr__fail(why, len, "%s names a folder; name a file in it", path);
    char *cur = sr__strdup(path);
    if (!cur) return sr__fail(why, len, "%s: out of memory", path);
    for (int hop = 0; hop < 40; hop++) {
        char *canon;
        const char *base = strrchr(cur, '/') ? strrchr(cur, '/') + 1 : cur;
        if (!strcmp(base, ".") || !strcmp(base, "..")) {
            free(cur);
            return sr__fail(why, len, "%s names a folder; name a file in it", path);
        }
        if (canonical(path, cur, &canon, why, len) != 0) {
            free(cur);
            return -1;
        }
        free(cur);
        cur = NULL;
        struct stat st;
        if (!strncmp(canon, "/proc/", 6)) { /* /dev/stdout, /dev/fd/N, /proc/self/fd/N land here */
            r->fd = own_fd(canon);
            r->kind = r->fd >= 0 ? OUT_OWN_FD : OUT_IN_PLACE;
            r->target = canon;
            return 0;
        }
        if (lstat(canon, &st) != 0) {
            if (errno != ENOENT) {
                int e = errno;
                sr__fail(why, len, "%s: cannot look at %s: %s", path, canon, strerror(e));
                free(canon);
                return -1;
            }
            r->kind = OUT_NEW, r->target = canon;
            return 0;
        }
        if (S_ISLNK(st.st_mode)) {
            char link[PATH_MAX];
            ssize_t n = readlink(canon, link, sizeof link - 1);
            if (n < 0) {
                int e = errno;
                sr__fail(why, len, "%s: cannot read the link %s: %s", path, canon, strerror(e));
                free(canon);
                return -1;
            }
            link[n] = 0;
            if (link[0] == '/') {
                cur = sr__strdup(link);
            } else { /* relative to the link's folder */
                *strrchr(canon, '/') = 0;
                cur = sr__fmt("%s/%s", canon, link);
            }
            free(canon);
            if (!cur) return sr__fail(why, len, "%s: out of memory", path);
            continue;
        }
        r->target = canon;
        if (S_ISREG(st.st_mode)) {
            r->kind = OUT_REGULAR, r->mode = st.st_mode & 07777;
            return 0;
        }
        if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) {
            r->kind = OUT_IN_PLACE;
            return 0;
        }
        sr__fail(why, len, "%s is %s; name a file", path,
                 S_ISDIR(st.st_mode)   ? "a folder"
                 : S_ISBLK(st.st_mode) ? "a block device"
                                       : "not a file");
        free(canon);
        r->target = NULL;
        return -1;
    }
    free(cur);
    return sr__fail(why, len, "%s: too many levels of symbolic links", path);
}

/* The temporary beside the target: FOLDER/.NAME.tmp-PID */
static char *temp_name(const char *target) {
    const char *slash = strrchr(target, '/');
    return sr__fmt("%.*s/.%s.tmp-%ld", (int)(slash - target), target, slash + 1, (long)getpid());
}

int sr__out_check(const char *path, const char *const *inputs, int ninputs, char *why, size_t len) {
    resolved r;
    if (resolve(path, &r, why, len) != 0) return -1;
    int rc = 0;
    struct stat out;
    if (stat(path, &out) == 0) /* the file the output would land in, whatever led to it */
        for (int i = 0; i < ninputs && !rc; i++) {
            struct stat in;
            if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
                rc = !strcmp(path, inputs[i])
                         ? sr__fail(why, len,
                                    "%s is a file this command reads: writing it would replace it; name another file",
                                    path)
                         : sr__fail(why, len,
                                    "%s is %s, a file this command reads: writing it would replace it; name "
                                    "another file",
                                    path, inputs[i]);
        }
    if (!rc && (r.kind == OUT_NEW || r.kind == OUT_REGULAR)) { /* the folder must take the temporary */
        char *tmp = temp_name(r.target);
        int fd = tmp ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1, e = errno;
        if (fd >= 0) close(fd), unlink(tmp);
        else
            rc = sr__fail(why, len, "%s: cannot create a file in its folder (%s): %s", path, tmp ? tmp : "?",
                          strerror(e));
        free(tmp);
    } else if (!rc && r.kind == OUT_IN_PLACE && access(r.target, W_OK) != 0) {
        rc = sr__fail(why, len, "%s: cannot write %s: %s", path, r.target, strerror(errno));
    } else if (!rc && r.kind == OUT_OWN_FD &&
               (fcntl(r.fd, F_GETFL) < 0 || (fcntl(r.fd, F_GETFL) & O_ACCMODE) == O_RDONLY)) {
        rc = sr__fail(why, len, "%s: descriptor %d is not open for writing", path, r.fd);
    }
    free(r.target);
    return rc;
}

int sr__out_open(sr__out *o, const char *path, char *why, size_t len) {
    *o = (sr__out){.path = path};
    resolved r;
    if (resolve(path, &r, why, len) != 0) return -1;
    int fd = -1;
    if (r.kind == OUT_OWN_FD) {
        fd = fcntl(r.fd, F_DUPFD_CLOEXEC, 3);
    } else if (r.kind == OUT_IN_PLACE) {
        fd = open(r.target, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    } else {
        o->tmp = temp_name(r.target);
        if (!o->tmp) errno = ENOMEM;
        fd = o->tmp ? open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666) : -1;
        if (fd >= 0 && r.kind == OUT_REGULAR) (void)fchmod(fd, r.mode); /* as the file it replaces */
        o->target = r.target, r.target = NULL;
    }
    if (fd >= 0 && !(o->f = fdopen(fd, "w"))) close(fd), fd = -1;
    if (fd < 0) {
        int e = errno;
        sr__fail(why, len, "cannot write %s (%s): %s", path, o->tmp ? o->tmp : r.target, strerror(e));
        if (o->tmp && e != EEXIST) unlink(o->tmp);
        free(r.target), free(o->tmp), free(o->target);
        *o = (sr__out){0};
        return -1;
    }
    free(r.target);
    return 0;
}

int sr__out_close(sr__out *o, char *why, size_t len) {
    int ok = o->f != NULL, e = 0;
    if (ok && fflush(o->f) != 0) ok = 0, e = errno;
    if (ok && o->tmp && fsync(fileno(o->f)) != 0) ok = 0, e = errno;
    if (o->f && fclose(o->f) != 0 && ok) ok = 0, e = errno;
    o->f = NULL;
    if (ok && o->tmp && rename(o->tmp, o->target) != 0) ok = 0, e = errno;
    if (ok && o->tmp) { /* the rename itself, on disk */
        *strrchr(o->target, '/') = 0;
        int d = open(o->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d >= 0) (void)fsync(d), close(d);
    }
    if (!ok) {
        sr__fail(why, len, "cannot write %s: %s", o->path, strerror(e));
        if (o->tmp) unlink(o->tmp);
    }
    free(o->tmp), free(o->target);
    o->tmp = o->target = NULL;
    return ok ? 0 : -1;
}

void sr__out_abort(sr__out *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    free(o->tmp), free(o->target);
    *o = (sr__out){0};
}

int sr__out_write(const char *path, const void *data, size_t n, char *why, size_t len) {
    sr__out o;
    if (sr__out_open(&o, path, why, len) != 0) return -1;
    if (n && fwrite(data, 1, n, o.f) != n) {
        int e = errno;
        sr__out_abort(&o);
        return sr__fail(why, len, "cannot write %s: %s", path, strerror(e));
    }
    return sr__out_close(&o, why, len);
}
