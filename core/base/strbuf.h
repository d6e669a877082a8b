/* A growable string, and JSON string quoting (results, `shardrun reference`). */
#ifndef SR__CORE_STRBUF_H
#define SR__CORE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "base/alloc.h" /* sr__fmt */

typedef struct sr__buf {
    char *s;
    size_t n, cap;
    int oom; /* an append found no memory: it and every later one were dropped (s holds what came before) */
} sr__buf;

/* Appends (checked: when memory runs out the text is dropped and b->oom set, for the caller to
   report "out of memory for ..."). */
void sr__buf_add(sr__buf *b, const char *data, size_t len);
void sr__buf_printf(sr__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "text" with JSON escapes. */
void sr__buf_json_str(sr__buf *b, const char *text);
void sr__buf_free(sr__buf *b);

#endif
