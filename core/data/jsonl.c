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
    if (sr__json_peek(j) != SR__JSON_OBJECT) {
        snprintf(err, errlen,
                 "%s:%lld: not a JSON object; a JSON Lines file has one object per line, e.g. "
                 "{\"%s\": \"...\"}",
                 name, line, field);
        return -1;
    }
    sr__json_object(j);
    while ((r = sr__json_member(j, &key, &klen)) > 0) {
        if (!found && sr__json_key_is(key, klen, field)) {
            if (sr__json_peek(j) != SR__JSON_STRING || sr__json_string(j, text, len) != 0) {
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
    size_t i0 = 0;
    /* a byte order mark, which editors on Windows put first; JSON itself has none */
    if (first_line == 1 && n >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) i0 = 3;
    for (size_t i = i0; i < n && rc == 0; line++) {
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

/* sr_jsonl_each's callback for the start check: the first record is enough */
static int first_only(void *user, const char *text, size_t len, long long line) {
    (void)user, (void)text, (void)len, (void)line;
    return 1;
}

int sr_jsonl_check_start(const char *path, const char *field, char *err, size_t errlen) {
    enum { HEAD = 1 << 20 };
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    char *buf = sr__malloc(HEAD);
    size_t n = 0;
    ssize_t k = 0;
    while (buf && n < HEAD && (k = read(fd, buf + n, HEAD - n)) != 0) {
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) break;
        n += (size_t)k;
    }
    int e = errno;
    close(fd);
    if (!buf || k < 0) {
        snprintf(err, errlen, "%s: cannot read: %s", path, buf ? strerror(e) : "out of memory");
        free(buf);
        return -1;
    }
    /* the first record's line: past the mark and the blank lines */
    size_t at = n >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3) ? 3 : 0;
    long long line = 1;
    while (at < n && (buf[at] == ' ' || buf[at] == '\t' || buf[at] == '\r' || buf[at] == '\n'))
        line += buf[at++] == '\n';
    int rc = 0;
    if (at == n && n < HEAD) {
        snprintf(err, errlen,
                 "%s: no text: the file is %s; a JSON Lines file has one object per line, e.g. {\"%s\": \"...\"}", path,
                 n ? "only blank lines" : "empty", field);
        rc = 1;
    } else if (at < n && buf[at] != '{') {
        snprintf(err, errlen,
                 "%s:%lld: not a JSON object (it starts with byte 0x%02x); a JSON Lines file has one object per line, "
                 "e.g. {\"%s\": \"...\"}",
                 path, line, (unsigned char)buf[at], field);
        rc = -1;
    } else if (at < n && memchr(buf + at, '\n', n - at)) {
        const char *nl = memchr(buf + at, '\n', n - at);
        /* the whole first line is here: checked as sr_jsonl_each will check it */
        rc = sr_jsonl_each(buf + at, (size_t)(nl - (buf + at)), path, line, field, first_only, NULL, err, errlen) < 0
                 ? -1
                 : 0;
    } else if (at < n && n < HEAD) { /* the file's one line, without its newline */
        rc = sr_jsonl_each(buf + at, n - at, path, line, field, first_only, NULL, err, errlen) < 0 ? -1 : 0;
    }
    free(buf);
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
