/*
 * The rendezvous store's wire format, shared by server and client.
 *
 *   request:  u32 magic "SRS1" | u8 op    | u24 channel | u32 nitems | nitems x (u32 len | bytes)
 *   reply:    u32 magic "SRS1" | u8 status| u24 channel | u32 nitems | nitems x (u32 len | bytes)
 *
 * Integers are little-endian.  A connection's first request must be HELLO carrying the run's
 * token, on channel 0.  Every length is bounded; a message that breaks a bound closes its
 * connection.
 *
 * Channels: one connection carries several independent request streams, so that an agent reaches
 * node 0 through one descriptor there (its control requests, the wait that shows it is alive, the
 * wait for the verdict and the hang watchdog's exchange), not four.  A reply carries the channel of
 * the request it answers.  Each channel is served as a connection of its own was: one request at a
 * time, and a pending WAIT or FETCH holds only its own channel.  A channel opens with its first
 * request; CLOSE ends it (no reply) and drops its pending wait, as closing a connection does; the
 * connection's end ends all of them.  Clients never reuse a channel's number on a connection, so a
 * reply sent before a CLOSE was read cannot be taken for the answer to a later request.  Channel 0
 * is what a client that knows no channels uses (the ranks' own connections).
 *   HELLO [token]            -> OK
 *   SET   [key, value]       -> OK
 *   GET   [key]              -> OK [value] | NOTFOUND
 *   ADD   [key, i64 delta]   -> OK [i64 new value]      (the value is kept as decimal text)
 *   WAIT  [i64 timeout_ms, key...] -> OK when all exist | TIMEOUT [missing key...]  (ms < 0: forever)
 *   CHECK [key...]           -> OK | NOTFOUND
 *   CLOSE []                 -> (no reply) ends the channel it is sent on (never channel 0)
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
#define SR__STORE_MAX_CHANNEL 0xffffffu /* a u24 */
/* Open channels a connection may hold at once (an agent uses 4; more breaks the protocol). */
#define SR__STORE_MAX_CHANNELS 64u

enum { SR__OP_HELLO = 1, SR__OP_SET, SR__OP_GET, SR__OP_ADD, SR__OP_WAIT, SR__OP_CHECK, SR__OP_FETCH, SR__OP_CLOSE };
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

/* A message's header: magic, op or status, channel, item count. */
static inline void sr__store_put_head(unsigned char *h, unsigned op_or_status, uint32_t channel, uint32_t nitems) {
    sr__put_u32(h, SR__STORE_MAGIC);
    h[4] = (unsigned char)op_or_status;
    h[5] = (unsigned char)channel, h[6] = (unsigned char)(channel >> 8), h[7] = (unsigned char)(channel >> 16);
    sr__put_u32(h + 8, nitems);
}

/* One parsed message: items point into the receive buffer.  The item arrays grow with the
   largest message seen (most carry a few items; a WAIT on every rank of a world carries
   thousands); zero-initialise, sr__store_msg_free when done. */
typedef struct sr__store_msg {
    unsigned op_or_status;
    uint32_t channel; /* 0 .. SR__STORE_MAX_CHANNEL */
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
    m->channel = (uint32_t)buf[5] | (uint32_t)buf[6] << 8 | (uint32_t)buf[7] << 16;
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
