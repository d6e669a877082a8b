/*
 * Base64 as etcd's JSON gateway writes keys and values (RFC 4648's standard alphabet, with '='
 * padding: what Go's encoding/base64.StdEncoding reads and writes).
 *
 * The requests (kv.c, lease.c, watch.c) encode keys and values into their JSON; the replies
 * (reply.c) decode them.  Neither allocates: the caller sizes the output with the _len functions.
 */
#ifndef SR__ETCD_BASE64_H
#define SR__ETCD_BASE64_H

#include <stddef.h>

#include "base/strbuf.h"

/* Appends the base64 of data[0 .. n) to b (b->oom on failure, as every sr__buf append). */
void sr__etcd_b64_add(sr__buf *b, const void *data, size_t n);

/* The most bytes text[0 .. n) decodes to. */
static inline size_t sr__etcd_b64_max(size_t n) { return n / 4 * 3 + 3; }

/* Decodes text[0 .. n) into out (sr__etcd_b64_max(n) bytes): the byte count, or -1 when the text is
   not padded base64 (a length not a multiple of 4, a byte outside the alphabet, misplaced '='). */
long long sr__etcd_b64_decode(const char *text, size_t n, unsigned char *out);

#endif
