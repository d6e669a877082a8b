/* A growable string, and JSON string quoting (results, `shardrun reference`). */
#ifndef SR_CORE_STRBUF_H
#define SR_CORE_STRBUF_H

#include <stddef.h>

typedef struct sr_buf {
    char *s;
    size_t n, cap;
} sr_buf;

void sr__buf_add(sr_buf *b, const char *data, size_t len);
void sr__buf_printf(sr_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends "text" with JSON escapes. */
void sr__buf_json_str(sr_buf *b, const char *text);
void sr__buf_free(sr_buf *b);
/* A new formatted string, to free (aborts when memory is exhausted). */
char *sr__fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
