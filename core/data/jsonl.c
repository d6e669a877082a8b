/* JSON Lines records' text field, through the project's strict JSON reader (shardrun/data.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "io/json.h"
#include "shardrun/data.h"

/* The field's string in one line; 0 found, -1 an error in err. */
static int line_text(sr__json *j, const char *field, const char **text, size_t *len, const char *name, long long line,
                     char *err, size_t errlen) {
    const char *key, *what;
    size_t klen, at;
    int r, found = 0;
    if (sr__json_peek(j) != SR_JSON_OBJECT) {
        snprintf(err, errlen,
                 "%s:%lld: not a JSON object; a JSON Lines file has one object per line, e.g. "
                 "{\"%s\": \"...\"}",
                 name, line, field);
        return -1;
    }
    sr__json_object(j);
    while ((r = sr__json_member(j, &key, &klen)) > 0) {
        if (!found && sr__json_key_is(key, klen, field)) {
            if (sr__json_peek(j) != SR_JSON_STRING || sr__json_string(j, text, len) != 0) {
                if (sr__json_error(j, &at)) break;
                snprintf(err, errlen,
                         "%s:%lld: the field \"%s\" is not a string; set text_field to the field that "
                         "holds the text",
                         name, line, field);
                return -1;
            }
            found = 1;
        } else if (sr__json_skip(j) != 0) {
            break;
        }
    }
    if (r < 0 || sr__json_error(j, &at) || sr__json_end(j) != 0) {
        what = sr__json_error(j, &at);
        snprintf(err, errlen, "%s:%lld: not JSON: %s at column %zu", name, line, what ? what : "malformed", at + 1);
        return -1;
    }
    if (!found) {
        snprintf(err, errlen,
                 "%s:%lld: the record has no field \"%s\"; set text_field to the field that holds "
                 "the text",
                 name, line, field);
        return -1;
    }
    return 0;
}

int sr_jsonl_each(const char *text, size_t n, const char *name, long long first_line, const char *field, sr_jsonl_fn fn,
                  void *user, char *err, size_t errlen) {
    char *arena = NULL;
    size_t cap = 0;
    long long line = first_line;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; line++) {
        const char *nl = memchr(text + i, '\n', n - i);
        size_t end = nl ? (size_t)(nl - text) : n, len = end - i;
        const char *s = text + i;
        i = end + 1;
        size_t k = 0;
        while (k < len && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) k++;
        if (k == len) continue; /* a blank line */
        if (len + 1 > cap) {
            char *a = sr__realloc(arena, len + 1);
            if (!a) {
                snprintf(err, errlen, "%s:%lld: out of memory for a line of %zu bytes", name, line, len);
                rc = -1;
                break;
            }
            arena = a, cap = len + 1;
        }
        sr__json j;
        sr__json_init(&j, s, len, arena);
        const char *t;
        size_t tl;
        if (line_text(&j, field, &t, &tl, name, line, err, errlen) != 0) rc = -1;
        else rc = fn(user, t, tl, line);
        sr__json_free(&j);
    }
    free(arena);
    return rc;
}

int sr_jsonl_file_each(const char *path, const char *field, sr_jsonl_fn fn, void *user, char *err, size_t errlen) {
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file (a directory, device or pipe); name JSON Lines files only", path);
        close(fd);
        return -1;
    }
    if (st.st_size == 0) {
        close(fd);
        return 0;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
        return -1;
    }
    madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
    int rc = sr_jsonl_each(m, (size_t)st.st_size, path, 1, field, fn, user, err, errlen);
    munmap(m, (size_t)st.st_size);
    return rc;
}
