/* Which peers a Gloo group's ranks connect to, and when (gloo_peers.h). */
#include "pg/gloo_peers.h"

/* Groups past this size have no direct path: its staging memory grows with the group, and they use
   the ring. */
#define DIRECT_MAX_RANKS 64
/* Groups up to this size connect every pair at creation; larger ones connect each pair the first
   time an operation needs it, so that creating a world of n ranks does not open n^2 sockets at once
   (at 256 ranks on one host, 130 K of them ran out of ephemeral ports).  Small groups stay eager:
   the direct path they use exchanges with every peer anyway, and a peer that died before its first
   operation breaks its connections at once, where a lazy pair would wait for its address until the
   timeout. */
#define EAGER_MAX_RANKS DIRECT_MAX_RANKS

sr__gloo_plan sr__gloo_plan_for(int size) {
    return (sr__gloo_plan){.eager = size <= EAGER_MAX_RANKS, .direct = size <= DIRECT_MAX_RANKS};
}

static int mod(int a, int n) { return ((a % n) + n) % n; }

void sr__gloo_ring_peers(int rank, int size, int *right, int *left) {
    *right = mod(rank + 1, size);
    *left = mod(rank - 1, size);
}

int sr__gloo_barrier_peers(int rank, int size, int *peers) {
    int n = 0;
    for (int d = 1; d < size && n + 2 <= SR__GLOO_MAX_BARRIER_PEERS; d <<= 1) {
        peers[n++] = mod(rank + d, size);
        peers[n++] = mod(rank - d, size);
    }
    return n;
}

/* In ranks counted from the root (v = rank - root mod n): the holder of range [lo, hi) sends to
   the first rank of its upper half, [mid, hi), which then holds that half, while the holder keeps
   [lo, mid).  Each rank receives once, from its parent, then sends to its children: log2(n)
   rounds, n - 1 messages. */
int sr__gloo_broadcast_tree(int rank, int size, int root, int *parent, int *children) {
    int v = mod(rank - root, size), nchildren = 0;
    *parent = -1;
    for (int lo = 0, hi = size; hi - lo > 1;) {
        int mid = lo + (hi - lo + 1) / 2;
        if (v < mid) {
            if (v == lo && nchildren < SR__GLOO_MAX_TREE_CHILDREN) children[nchildren++] = (mid + root) % size;
            hi = mid;
        } else {
            if (v == mid) *parent = (lo + root) % size;
            lo = mid;
        }
    }
    return nchildren;
}

int sr__gloo_fresh_peers(int rank, const int *peers, int n, const unsigned char *connected, int *fresh) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int p = peers[i], seen = p == rank || connected[p];
        for (int j = 0; j < k && !seen; j++) seen = fresh[j] == p;
        if (!seen) fresh[k++] = p;
    }
    return k;
}
