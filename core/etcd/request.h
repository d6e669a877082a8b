/*
 * The pieces of a request's JSON that kv.c, lease.c and watch.c share: a key in base64, and the
 * range_end that makes a key a prefix.
 */
#ifndef SR__ETCD_REQUEST_H
#define SR__ETCD_REQUEST_H

#include <stdint.h>

#include "base/strbuf.h"

/* Appends a string literal. */
#define SR__ETCD_ADD(b, lit) sr__buf_add((b), (lit), sizeof(lit) - 1)

/* Appends "key":"<base64 of key>" and, for a prefix, ,"range_end":"<base64 of the first key
   after every key that starts with it>" ("" as a prefix: every key). */
void sr__etcd_add_key(sr__buf *b, const char *key, int prefix);
/* Appends ,"NAME":"V": proto3's int64 as a string. */
void sr__etcd_add_int64(sr__buf *b, const char *name, int64_t v);

#endif
