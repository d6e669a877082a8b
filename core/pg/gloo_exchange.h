/*
 * The store traffic of Gloo's address exchange: what a rank of a Gloo group publishes so that its
 * peers can connect to it, and what it reads to connect to them.  Each of Gloo's TCP pairs listens
 * on an address of its own, so a rank has one address *for* each peer (opaque bytes here, Gloo's
 * tcp::Address; sr__gloo_address_len() in gloo_shim.h is their size).
 *
 *   mesh (a group connecting every pair at creation, gloo_peers.h): each rank sets <prefix><rank>
 *     to its N-1 addresses in rank order, skipping itself; its own address is piece `rank` of N-1
 *     in a lower rank's list and piece `rank - 1` in a higher rank's: one write and two reads per
 *     rank, for all its peers (sr__store_fetch_pieces).
 *   pairs (a group connecting a pair when an operation first needs it): each end sets
 *     <prefix>pair/<rank>/<peer>, then reads <prefix>pair/<peer>/<rank> until it is there.
 *
 * gloo_shim.cc calls these with the addresses of Gloo's pairs; bench/store_sim.c with bytes of the
 * same size, for the peers that gloo_peers.h picks, so the simulator's requests are the worker's.
 * Returns: 0 done; 1 a peer did not come within the timeout (err names it); -1 a store error or
 * no memory (err says which).
 */
#ifndef SR__CORE_PG_GLOO_EXCHANGE_H
#define SR__CORE_PG_GLOO_EXCHANGE_H

#include <pthread.h>
#include <stddef.h>

#include "store/store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A group has two contexts, each connecting its own pairs: the main one and the direct path's. */
typedef enum { SR__GLOO_MAIN_CONTEXT, SR__GLOO_DIRECT_CONTEXT } sr__gloo_context;

/* Where one context's keys go, and how it reaches the store. */
typedef struct sr__gloo_store {
    sr__store *store;
    pthread_mutex_t *lock; /* held around each store call (the client is shared) */
    char prefix[400];      /* the context's keys: the group's prefix, and "direct/" for the direct path */
    double timeout_s;
} sr__gloo_store;

/* The keys of context `which` of the group whose keys lie under group_prefix ("pg/world/gloo/").
   0, or -1 when the prefix does not fit (err says so). */
int sr__gloo_store_init(sr__gloo_store *gs, sr__store *store, pthread_mutex_t *lock, const char *group_prefix,
                        sr__gloo_context which, double timeout_s, char *err, size_t errlen);

/* The mesh: publishes mine (this rank's address for each peer, size - 1 of addr_len bytes in rank
   order skipping this rank), then fills theirs (the same layout) with each peer's address for
   this rank, waiting up to the timeout for every peer's list. */
int sr__gloo_mesh_exchange(const sr__gloo_store *gs, int rank, int size, const void *mine, size_t addr_len,
                           void *theirs, char *err, size_t errlen);

/* Pairs, one at a time: this rank's address for `peer`; and peer's address for this rank if it
   is there now (1, *addr malloc'ed), 0 when not yet, -1 on a store error. */
int sr__gloo_pair_publish(const sr__gloo_store *gs, int rank, int peer, const void *addr, size_t len, char *err,
                          size_t errlen);
int sr__gloo_pair_fetch(const sr__gloo_store *gs, int rank, int peer, void **addr, size_t *len, char *err,
                        size_t errlen);

/* Called as peer peers[i]'s address for this rank arrives (addr valid during the call only);
   nonzero stops the exchange with -1 (the reason in err). */
typedef int (*sr__gloo_arrived_fn)(void *arg, int i, const void *addr, size_t len, char *err, size_t errlen);

/* Pairs, for the `n` peers an operation meets that are not connected yet: publishes
   addrs[i * addr_len ..] for peers[i], then reads each peer's address for this rank until it is
   there, calling arrived() for each as it comes (so that connecting it need not wait for the
   others), pausing 0.2 ms, doubling to 20 ms, between rounds.  On a timeout *late is the index
   of the first peer that did not come (-1 otherwise). */
int sr__gloo_pair_exchange(const sr__gloo_store *gs, int rank, const int *peers, int n, const void *addrs,
                           size_t addr_len, sr__gloo_arrived_fn arrived, void *arg, int *late, char *err,
                           size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
