/* The tokenizer's error helper (tokenizer_impl.h), in a file of its own so that the loaders and the
   pre-tokenizers calling it (tokenizer.c, tokenizer_regex.c...) do not call each other. */
#define _POSIX_C_SOURCE 200809L
#include "tokenizer_impl.h"

#include <stdarg.h>
#include <stdio.h>

int tf__fail(char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen) vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}
