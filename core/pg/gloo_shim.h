/*
 * The thin C++ shim over Debian's Gloo (TCP transport): context creation through shardrun's
 * store (pairs connected at once, or each when first used: pg/gloo_peers.h picks the peers,
 * pg/gloo_exchange.h makes the store requests), point-to-point ring steps, broadcast and barrier.
 * Every Gloo exception becomes an error code and a message; nothing C++ crosses this header.  The
 * ring algorithms themselves are C (pg/gloo.c).
 */
#ifndef SR__CORE_GLOO_SHIM_H
#define SR__CORE_GLOO_SHIM_H

#include <pthread.h>
#include <stddef.h>

#include "store/store.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr__gloo sr__gloo;

/* Keys go to the store under `prefix`; `store_lock` serialises the (shared) store client.
   hostname/iface pick the interface Gloo listens on (iface wins when set).  direct_cap > 0 also
   sets up the direct path (sr__gloo_exchange) for messages of up to direct_cap bytes.
   lazy 0: every pair connects now (2 store round trips per rank; one socket per peer, and one
   listening socket per peer until it connects); lazy 1: none does, each pair connects the first
   time an operation needs it, at both of its ends (a store write per new pair, and reads until the
   peer's address is there):
   the ring steps their two neighbours, a broadcast its tree's edges (they depend on the root), a
   barrier rank +- 2^k, the direct path every peer.  A peer that died before it connected is then
   noticed only at the timeout. */
sr__gloo *sr__gloo_create(sr__store *store, pthread_mutex_t *store_lock, const char *prefix, int rank, int size,
                          const char *hostname, const char *iface, double timeout_s, size_t direct_cap, int lazy,
                          char *err, size_t errlen);

/* Memory registered with Gloo for transfers.  Registering is cheap, but unregistering waits for
   Gloo's loop thread to let go of it (spinning on sched_yield): register once per operation (or
   keep it, for scratch memory), never per step. */
typedef struct sr__gloo_buf sr__gloo_buf;
sr__gloo_buf *sr__gloo_buf_new(sr__gloo *g, void *ptr, size_t len, char *err, size_t errlen);
void sr__gloo_buf_free(sr__gloo_buf *b);

/* Called after each received segment of a ring step (to reduce it while the rest arrives);
   offset is relative to the start of the received region. */
typedef void (*sr__gloo_segment_fn)(void *arg, size_t offset, size_t len);

/* One ring step: send sb[soff..soff+slen) to `right` while receiving rb[roff..roff+rlen) from
   `left`, in segments of at most `segment` bytes; on_segment (may be NULL) runs as each arrives.
   On a timeout, *stuck_peer is the rank that did not deliver. */
int sr__gloo_ring_step(sr__gloo *g, int right, sr__gloo_buf *sb, size_t soff, size_t slen, int left, sr__gloo_buf *rb,
                       size_t roff, size_t rlen, size_t segment, sr__gloo_segment_fn on_segment, void *arg,
                       int *stuck_peer, char *err, size_t errlen);
/* The direct path's largest message in bytes (0: none). */
size_t sr__gloo_direct_cap(sr__gloo *g);
/* One round of the direct path, for small messages: sends send[p][0..slen[p]) to every peer p
   (entries of this rank are ignored; slen[p] <= the cap, 0 allowed), then receives one message
   from every peer; recv[p] points to peer p's, in staging memory that stays valid until the next
   exchange.  Every rank must exchange in the same order; each message is one blocking write and
   one blocking read, so the calling thread is woken once per round, not once per ring step.
   On a timeout, *stuck_peer is the rank that did not deliver. */
int sr__gloo_exchange(sr__gloo *g, const void *const *send, const size_t *slen, const unsigned char **recv,
                      int *stuck_peer, char *err, size_t errlen);
/* Broadcast (a tree of halved ranges from the root) and barrier (dissemination: rank +- 2^k);
   on a timeout, *stuck_peer is the rank that did not deliver. */
int sr__gloo_broadcast(sr__gloo *g, void *buf, size_t len, int root, int *stuck_peer, char *err, size_t errlen);
int sr__gloo_barrier(sr__gloo *g, int *stuck_peer, char *err, size_t errlen);
void sr__gloo_free(sr__gloo *g);
/* The bytes of the address each pair publishes through the store (pg/gloo_exchange.h). */
size_t sr__gloo_address_len(void);

#ifdef __cplusplus
}
#endif
#endif
