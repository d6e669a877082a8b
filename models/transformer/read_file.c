/* transformer read_file: a whole file into memory (see read_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *tf_file_kind(unsigned mode) {
    mode_t m = (mode_t)mode;
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISFIFO(m) ? "a pipe (FIFO)"
           : S_ISSOCK(m) ? "a socket"
                         : "a special file";
}

char *tf_read_file_max(const char *path, const char *what, size_t max, const char *cap_why, size_t *len, char *err,
                       size_t errlen) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a pipe must not block the open */
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s %s is %s, not a regular file; give regular files", what, path,
                 tf_file_kind((unsigned)st.st_mode));
        close(fd);
        return NULL;
    }
    if ((unsigned long long)st.st_size > max) {
        snprintf(err, errlen, "%s %s is %lld bytes, more than %s (%zu bytes)", what, path, (long long)st.st_size,
                 cap_why, max);
        close(fd);
        return NULL;
    }
    /* the size may change while reading: read up to one byte more than it said, then by blocks, to max */
    size_t cap = (size_t)st.st_size + 2, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        snprintf(err, errlen, "out of memory for %s %s (%zu bytes)", what, path, cap);
        close(fd);
        return NULL;
    }
    for (;;) {
        if (cap - n < 2) {
            size_t c = cap * 2 > max + 2 ? max + 2 : cap * 2;
            char *b = c > cap ? realloc(buf, c) : NULL;
            if (!b) {
                if (c > cap) snprintf(err, errlen, "out of memory for %s %s (%zu bytes)", what, path, c);
                else
                    snprintf(err, errlen, "%s %s grew beyond %s (%zu bytes) while it was read", what, path, cap_why,
                             max);
                free(buf);
                close(fd);
                return NULL;
            }
            buf = b, cap = c;
        }
        ssize_t got = read(fd, buf + n, cap - n - 1);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
        if (n > max) {
            snprintf(err, errlen, "%s %s grew beyond %s (%zu bytes) while it was read", what, path, cap_why, max);
            free(buf);
            close(fd);
            return NULL;
        }
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

char *tf_read_file(const char *path, const char *what, size_t *len, char *err, size_t errlen) {
    return tf_read_file_max(path, what, TF_READ_FILE_MAX, "the 1 GiB a file may have here", len, err, errlen);
}
