/*
 * The rendezvous store's wire format, shared by server and client.
 *
 *   request:  u32 magic "SRS1" | u8 op    | u8 pad[3] | u32 nitems | nitems x (u32 len | bytes)
 *   reply:    u32 magic "SRS1" | u8 status| u8 pad[3] | u32 nitems | nitems x (u32 len | bytes)
 *
 * Integers are little-endian.  A connection's first request must be HELLO carrying the run's
 * token.  Every length is bounded; a message that breaks a bound closes its connection.
 *   HELLO [token]            -> OK
 *   SET   [key, value]       -> OK
 *   GET   [key]              -> OK [value] | NOTFOUND
 *   ADD   [key, i64 delta]   -> OK [i64 new value]      (the value is kept as decimal text)
 *   WAIT  [i64 timeout_ms, key...] -> OK when all exist | TIMEOUT [missing key...]  (ms < 0: forever)
 *   CHECK [key...]           -> OK | NOTFOUND
 *   FETCH [i64 timeout_ms, u32 piece | u32 pieces, key...]
 *                            -> OK [value...] when all exist | TIMEOUT [missing key...]
 *        a wait and the gets that follow it in one round trip (ms 0: no wait, < 0: forever);
 *        pieces > 0 sends only part `piece` of `pieces` equal parts of each value (a Gloo rank
 *        reads its own pair's address out of a peer's list), 0 the whole values; the values
 *        together must fit one message
 */
#ifndef SR__CORE_STORE_WIRE_H
#define SR__CORE_STORE_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

#define SR__STORE_MAGIC 0x31535253u /* "SRS1" */
#define SR__STORE_MAX_KEY 1024u
#define SR__STORE_MAX_VALUE (1u << 20)
#define SR__STORE_MAX_ITEMS 65536u /* a WAIT or FETCH on every rank of a large world */
#define SR__STORE_MAX_MESSAGE (4u << 20)
#define SR__STORE_HEADER 12u

enum { SR__OP_HELLO = 1, SR__OP_SET, SR__OP_GET, SR__OP_ADD, SR__OP_WAIT, SR__OP_CHECK, SR__OP_FETCH };
enum { SR__ST_OK = 0, SR__ST_NOTFOUND, SR__ST_TIMEOUT, SR__ST_ERROR };

static inline void sr__put_u32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8), p[2] = (unsigned char)(v >> 16),
    p[3] = (unsigned char)(v >> 24);
}
static inline uint32_t sr__get_u32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline void sr__put_i64(unsigned char *p, int64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)((uint64_t)v >> (8 * i));
}
static inline int64_t sr__get_i64(const unsigned char *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return (int64_t)v;
}

/* One parsed message: items point into the receive buffer.  The item arrays grow with the
   largest message seen (most carry a few items; a WAIT on every rank of a world carries
   thousands); zero-initialise, sr__store_msg_free when done. */
typedef struct sr__store_msg {
    unsigned op_or_status;
    uint32_t nitems, cap;
    const unsigned char **item;
    uint32_t *len;
} sr__store_msg;

static inline void sr__store_msg_free(sr__store_msg *m) {
    free((void *)m->item);
    free(m->len);
    m->item = NULL, m->len = NULL, m->cap = 0;
}

/* Parses a message at the start of buf: returns its total size, 0 when incomplete, -1 when it
   breaks a bound, -2 when no memory is left for its items (either way the connection must be
   closed). */
static inline long sr__store_parse(const unsigned char *buf, size_t n, sr__store_msg *m) {
    if (n < SR__STORE_HEADER) return 0;
    if (sr__get_u32(buf) != SR__STORE_MAGIC) return -1;
    m->op_or_status = buf[4];
    m->nitems = sr__get_u32(buf + 8);
    if (m->nitems > SR__STORE_MAX_ITEMS) return -1;
    if (m->nitems > m->cap) {
        uint32_t cap = m->cap ? m->cap : 8;
        while (cap < m->nitems) cap *= 2;
        const unsigned char **item = sr__realloc((void *)m->item, cap * sizeof *item);
        if (item) m->item = item;
        uint32_t *len = sr__realloc(m->len, cap * sizeof *len);
        if (len) m->len = len;
        if (!item || !len) return -2;
        m->cap = cap;
    }
    size_t off = SR__STORE_HEADER;
    for (uint32_t i = 0; i < m->nitems; i++) {
        if (n < off + 4) return 0;
        uint32_t len = sr__get_u32(buf + off);
        if (len > SR__STORE_MAX_VALUE || off + 4 + len > SR__STORE_MAX_MESSAGE) return -1;
        off += 4;
        if (n < off + len) return 0;
        m->item[i] = buf + off;
        m->len[i] = len;
        off += len;
    }
    return (long)off;
}

#endif
