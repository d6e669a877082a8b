/*
 * The world's host table: for each world rank, an index naming its host (the lowest world rank
 * with the same host identity, sr__shm_host_id), and the compact text the store carries it in.
 *
 * Lifecycle (pg.c, world creation, in each rank's creating thread, holding its store lock): every
 * rank publishes its identity at <root>host/<rank> before the world's "arrived" meeting.  The rank
 * whose arrival completes the meeting calls sr__host_table_publish before it lets the meeting end:
 * it reads the N identities once, computes the table (sr__host_table_index), encodes it
 * (sr__host_table_encode) and sets <root>hosts.  Every rank, after the meeting, calls
 * sr__host_table_read: one GET of that key, decoded (sr__host_table_decode).  The store moves O(N)
 * bytes for it in the layouts shardrun makes (a node's ranks are consecutive, and the text is one
 * segment or a few), where every rank reading every identity moved N^2.
 *
 * The text: segments separated by ',', each COUNT 'x' LEN [ '@' HOST [ ('+' | '-') STEP ] ], all
 * decimal: COUNT consecutive blocks of LEN ranks each (COUNT, LEN >= 1).  Without '@', each block
 * is a host of its own, whose index is the block's first rank.  With '@', block i (from 0) is on
 * host HOST + i * STEP (STEP 0 when absent).  The segments cover ranks 0 .. N-1 in order.
 *
 *     "4096x1"              4,096 agents, each its own host
 *     "512x8"               512 nodes of 8 ranks (any uniform --nproc-per-node)
 *     "1x4096"              every rank on one host
 *     "1x2,1x3,1x1"         hosts of 2, 3 and 1 ranks
 *     "4x1,4x1@0+1"         4 hosts, ranks dealt round robin: 0 1 2 3 0 1 2 3
 *     "2x2,1x2@0"           0 0 2 2 0 0: a block on an earlier host
 *
 * Any array of ints round-trips exactly (decode(encode(h)) == h), whatever it holds.  When the
 * publishing rank fails (out of memory, the store), <root>hosts says why instead: "failed <rank>:
 * <why>", and every rank's read fails with that, at once, rather than one rank failing and the
 * others timing out.
 *
 * index, encode and decode are pure functions of their arguments (no store, no globals).
 */
#ifndef SR__CORE_PG_HOST_TABLE_H
#define SR__CORE_PG_HOST_TABLE_H

#include <stddef.h>

#include "store/store.h"

/* The rank completing the "arrived" meeting (any world rank, `rank` names it in a failure): every
   identity <root>host/0 .. <root>host/size-1 read (in FETCHes of as many keys as one message
   carries: one while they fit 4 MiB; a FETCH that fails is tried again with half the keys, one key
   that fails is a store error), the table set at <root>hosts, or why it could not be made.  0 when
   either was set; -1 when the store failed (sr__store_error says why). */
int sr__host_table_publish(sr__store *store, const char *root, int rank, int size);

/* Every rank: hosts[0 .. size) from <root>hosts, in one request.  0, or -1 with why (the store's
   error, the publishing rank's failure, or a table that does not read as the world's: each host
   named by its lowest rank). */
int sr__host_table_read(sr__store *store, const char *root, int size, int *hosts, char *why, size_t whylen);

/* hosts[r] = the lowest rank q with the same identity as r (ids[q], lens[q] bytes), for r in
   0 .. n-1, through a hash table over the identities: O(n) expected.  0, or -1 when memory ran out
   (hosts untouched). */
int sr__host_table_index(const void *const *ids, const size_t *lens, int n, int *hosts);

/* The text of hosts[0 .. n), malloc'ed and NUL-terminated, its length in *len; NULL when memory
   ran out. */
char *sr__host_table_encode(const int *hosts, int n, size_t *len);

/* hosts[0 .. n) from text[0 .. len).  0, or -1 with what is wrong in err (hosts partly written). */
int sr__host_table_decode(const char *text, size_t len, int *hosts, int n, char *err, size_t errlen);

#endif
