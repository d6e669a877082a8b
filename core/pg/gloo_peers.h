/*
 * Which peers a Gloo group's ranks connect to, and when: decided here once, for the backend that
 * connects them (gloo.c, gloo_shim.cc) and for bench/store_sim.c, which replays the store traffic
 * of those connections at scale and must meet the same peers.
 *
 * A small group connects every pair when it is created (eager) and also gets the direct path, a
 * second context whose pairs are connected too; a larger one connects a pair the first time an
 * operation needs it, at both of its ends: a ring step its two neighbours, a broadcast its tree's
 * edges, a barrier rank +- 2^k.
 */
#ifndef SR__CORE_PG_GLOO_PEERS_H
#define SR__CORE_PG_GLOO_PEERS_H

#ifdef __cplusplus
extern "C" {
#endif

/* most peers of a barrier (2 per round, ceil(log2 size) rounds) and children of a broadcast tree */
enum { SR__GLOO_MAX_BARRIER_PEERS = 64, SR__GLOO_MAX_TREE_CHILDREN = 32 };

typedef struct sr__gloo_plan {
    int eager;  /* 1: every pair connects at creation; 0: each when an operation first needs it */
    int direct; /* 1: the group has the direct path (its own context, every pair connected) */
} sr__gloo_plan;

/* How a group of `size` ranks connects. */
sr__gloo_plan sr__gloo_plan_for(int size);

/* A ring step's peers: *right (rank + 1) receives from this rank, *left (rank - 1) sends to it. */
void sr__gloo_ring_peers(int rank, int size, int *right, int *left);

/* A dissemination barrier's peers, round by round: peers[2k] = rank + 2^k (signalled in round k),
   peers[2k + 1] = rank - 2^k (heard from), mod size.  Returns 2 * rounds (at most
   SR__GLOO_MAX_BARRIER_PEERS). */
int sr__gloo_barrier_peers(int rank, int size, int *peers);

/* A broadcast tree of halved ranges from `root`: *parent (-1 for the root) and the children this
   rank sends to, in order.  Returns the number of children (at most SR__GLOO_MAX_TREE_CHILDREN). */
int sr__gloo_broadcast_tree(int rank, int size, int root, int *parent, int *children);

/* The peers of peers[0..n) that a lazy group still has to connect: not this rank, not
   connected[p], each once, in order.  Returns how many went to fresh (room for n). */
int sr__gloo_fresh_peers(int rank, const int *peers, int n, const unsigned char *connected, int *fresh);

#ifdef __cplusplus
}
#endif
#endif
