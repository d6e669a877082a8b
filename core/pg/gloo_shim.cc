// The only C++ in shardrun: Gloo behind a C interface (gloo_shim.h).
#include "pg/gloo_shim.h"
#include "pg/gloo_exchange.h"
#include "pg/gloo_peers.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/common/error.h>
#include <gloo/context.h>
#include <gloo/transport/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/device.h>

namespace {

void set_error(char *err, size_t errlen, const char *what) {
    if (err && errlen) std::snprintf(err, errlen, "%s", what);
}

// Runs fn; a Gloo (or any) exception becomes -1 and its message.
template <typename Fn> int guarded(char *err, size_t errlen, Fn fn) {
    try {
        fn();
        return 0;
    } catch (const std::exception &e) { set_error(err, errlen, e.what()); } catch (...) {
        set_error(err, errlen, "unknown Gloo error");
    }
    return -1;
}

// A Gloo context over shardrun's store whose pairs connect in parallel, either all of them at
// creation (connect_all) or each the first time an operation needs it (connect).  In Debian's Gloo
// every pair listens on a port of its own from its creation until its peer connects, and
// connecting a pair needs the address of the peer's pair for this rank: so a pair is created, its
// address published and the peer's read only when both ends connect it, in the same operation.
// Gloo's own connectFullMesh connects the pairs one after another, and each connect waits for a
// tick of the device's event loop, which sleeps up to 10 ms when idle: 10 ms per peer.  Connecting
// them all at once waits for about one tick.
class PeerContext : public gloo::Context {
  public:
    // sync: each pair leaves the device's event loop once connected (blocking socket, read by the
    // thread that waits for it), for the direct path's latency
    PeerContext(int rank, int size, const std::shared_ptr<gloo::transport::Device> &dev, const sr__gloo_store &store,
                std::chrono::milliseconds timeout, bool sync)
        : gloo::Context(rank, size), store_(store), sync_(sync), connected_((size_t)size, 0) {
        setTimeout(timeout);
        device_ = dev;
        transportContext_ = dev->createContext(rank, size);
        transportContext_->setTimeout(timeout);
    }

    // Every pair, at once, through the mesh exchange (pg/gloo_exchange.h): two round trips for all
    // peers.
    void connect_all() {
        std::vector<int> peers;
        for (int i = 0; i < size; i++)
            if (i != rank) peers.push_back(i);
        size_t len = 0;
        auto mine = addresses(peers, &len);
        std::vector<char> theirs(mine.size());
        char err[1280] = "";
        if (sr__gloo_mesh_exchange(&store_, rank, size, mine.data(), len, theirs.data(), err, sizeof err) != 0)
            throw gloo::IoException(err);
        std::vector<std::vector<char>> addrs;
        for (size_t i = 0; i < peers.size(); i++)
            addrs.emplace_back(theirs.begin() + (long)(i * len), theirs.begin() + (long)((i + 1) * len));
        connect_pairs(peers, addrs);
    }

    // The pairs to `peers` that are not connected yet (both ends of a pair connect it in the same
    // operation; gloo_peers.h picks them): create each and publish its address, then connect each
    // peer as soon as its address is there, each in a thread of its own (the pair exchange of
    // pg/gloo_exchange.h calls arrived() as each comes).  Not all at once, once all are there: a
    // rank whose one peer never comes would leave its other peers waiting in Gloo's connect (five
    // timeouts) instead of timing out in the operation beside it.  A peer that does not come
    // within the timeout: *stuck.
    void connect(const std::vector<int> &peers, int *stuck) {
        std::vector<int> fresh(peers.size());
        fresh.resize(
            (size_t)sr__gloo_fresh_peers(rank, peers.data(), (int)peers.size(), connected_.data(), fresh.data()));
        if (fresh.empty()) return;
        size_t len = 0;
        auto mine = addresses(fresh, &len);
        Arrivals a{this,
                   &fresh,
                   std::vector<std::vector<char>>(fresh.size()),
                   std::vector<std::exception_ptr>(fresh.size()),
                   {}};
        char err[1280] = "";
        int late = -1;
        int rc = sr__gloo_pair_exchange(&store_, rank, fresh.data(), (int)fresh.size(), mine.data(), len, arrived, &a,
                                        &late, err, sizeof err);
        for (auto &t : a.threads) t.join();
        if (rc == 1 && late >= 0) *stuck = fresh[(size_t)late];
        if (rc != 0) throw gloo::IoException(err);
        for (auto &e : a.errors)
            if (e) std::rethrow_exception(e);
        for (int p : fresh) connected_[(size_t)p] = 1;
    }

    // whether every peer is connected (connect_all, or each met once)
    bool all_connected() const {
        for (int i = 0; i < size; i++)
            if (i != rank && !connected_[(size_t)i]) return false;
        return true;
    }

  private:
    // What connect() shares with the threads it starts: the addresses as they arrive (sized up
    // front, so that a thread's reference stays valid), each thread's failure.
    struct Arrivals {
        PeerContext *ctx;
        const std::vector<int> *peers;
        std::vector<std::vector<char>> addrs;
        std::vector<std::exception_ptr> errors;
        std::vector<std::thread> threads;
    };

    // peer peers[i]'s address for this rank came: connect the pair in a thread of its own
    static int arrived(void *arg, int i, const void *addr, size_t len, char *err, size_t errlen) {
        auto *a = static_cast<Arrivals *>(arg);
        return guarded(err, errlen, [&] {
            a->addrs[(size_t)i].assign((const char *)addr, (const char *)addr + len);
            a->threads.emplace_back([a, i] {
                try {
                    a->ctx->connect_one((*a->peers)[(size_t)i], a->addrs[(size_t)i]);
                } catch (...) { a->errors[(size_t)i] = std::current_exception(); }
            });
        });
    }

    // A new pair to each of `peers`, and their addresses end to end (*len bytes each).
    std::vector<char> addresses(const std::vector<int> &peers, size_t *len) {
        std::vector<char> out;
        for (int p : peers) {
            auto bytes = transportContext_->createPair(p)->address().bytes();
            if (out.empty()) *len = bytes.size();
            else if (bytes.size() != *len) throw gloo::IoException("Gloo's pair addresses differ in size");
            out.insert(out.end(), bytes.begin(), bytes.end());
        }
        return out;
    }

    void connect_one(int peer, const std::vector<char> &addr) {
        auto &pair = transportContext_->getPair(peer);
        pair->connect(addr);
        // leaving the loop waits for one of its ticks: in parallel, one tick in all
        if (sync_) pair->setSync(true, false);
    }

    void connect_pairs(const std::vector<int> &peers, const std::vector<std::vector<char>> &addrs) {
        std::vector<std::thread> threads;
        std::vector<std::exception_ptr> errors(peers.size());
        for (size_t i = 0; i < peers.size(); i++)
            threads.emplace_back([&, i] {
                try {
                    connect_one(peers[i], addrs[i]);
                } catch (...) { errors[i] = std::current_exception(); }
            });
        for (auto &t : threads) t.join();
        for (auto &e : errors)
            if (e) std::rethrow_exception(e);
        for (int p : peers) connected_[(size_t)p] = 1;
    }

    sr__gloo_store store_;
    bool sync_;
    std::vector<unsigned char> connected_;
};

} // namespace

// The direct path: a second context over the same device whose pairs are in Gloo's sync mode,
// each with one bound send buffer and one bound receive buffer (same slot on both sides) over
// staging memory allocated on first use.  A message then costs one blocking write by the sender
// and one blocking read by the receiving thread itself: no event-loop thread, no ready/ready
// handshake, which matter when ranks outnumber cores.
constexpr int kDirectSlot = 0;

struct sr__gloo {
    std::shared_ptr<PeerContext> ctx;
    std::chrono::milliseconds timeout;
    std::shared_ptr<PeerContext> direct;
    size_t cap = 0;                            // bytes per peer and message
    std::vector<unsigned char> sstage, rstage; // peer p's slice at p * cap
    std::vector<std::unique_ptr<gloo::transport::Buffer>> sbuf, rbuf;
    bool ready = false; // staging and buffers set up

    ~sr__gloo() {
        // buffers unregister from their pairs, so they go first
        sbuf.clear();
        rbuf.clear();
    }
};

extern "C" sr__gloo *sr__gloo_create(sr__store *store, pthread_mutex_t *store_lock, const char *prefix, int rank,
                                     int size, const char *hostname, const char *iface, double timeout_s,
                                     size_t direct_cap, int lazy, char *err, size_t errlen) {
    sr__gloo *g = nullptr;
    guarded(err, errlen, [&] {
        gloo::transport::tcp::attr attr;
        if (iface && *iface) attr.iface = iface;
        else attr.hostname = hostname;
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        auto timeout = std::chrono::milliseconds((long long)(timeout_s * 1000));
        sr__gloo_store keys, direct_keys;
        char why[256];
        if (sr__gloo_store_init(&keys, store, store_lock, prefix, SR__GLOO_MAIN_CONTEXT, timeout_s, why, sizeof why) ||
            sr__gloo_store_init(&direct_keys, store, store_lock, prefix, SR__GLOO_DIRECT_CONTEXT, timeout_s, why,
                                sizeof why))
            throw gloo::IoException(why);
        auto ctx = std::make_shared<PeerContext>(rank, size, dev, keys, timeout, false);
        if (!lazy) ctx->connect_all();
        std::shared_ptr<PeerContext> direct;
        if (direct_cap) {
            direct = std::make_shared<PeerContext>(rank, size, dev, direct_keys, timeout, true);
            if (!lazy) direct->connect_all();
        }
        g = new sr__gloo{ctx, timeout, direct, direct ? direct_cap : 0, {}, {}, {}, {}, false};
    });
    return g;
}

// Staging memory and bound buffers of the direct path, on first use (most groups never need it);
// the direct path exchanges with every peer, so a lazy group connects them all here.
static void direct_setup(sr__gloo *g, int *stuck_peer) {
    if (g->ready) return;
    int n = g->direct->size;
    if (!g->direct->all_connected()) {
        std::vector<int> everyone;
        for (int p = 0; p < n; p++) everyone.push_back(p);
        g->direct->connect(everyone, stuck_peer);
    }
    g->sstage.resize(g->cap * (size_t)n);
    g->rstage.resize(g->cap * (size_t)n);
    g->sbuf.resize((size_t)n);
    g->rbuf.resize((size_t)n);
    for (int p = 0; p < n; p++) {
        if (p == g->direct->rank) continue;
        auto &pair = g->direct->getPair(p);
        g->rbuf[(size_t)p] = pair->createRecvBuffer(kDirectSlot, g->rstage.data() + (size_t)p * g->cap, g->cap);
        g->sbuf[(size_t)p] = pair->createSendBuffer(kDirectSlot, g->sstage.data() + (size_t)p * g->cap, g->cap);
    }
    g->ready = true;
}

extern "C" size_t sr__gloo_direct_cap(sr__gloo *g) { return g->cap; }

extern "C" int sr__gloo_exchange(sr__gloo *g, const void *const *send, const size_t *slen, const unsigned char **recv,
                                 int *stuck_peer, char *err, size_t errlen) {
    *stuck_peer = -1;
    int n = g->direct->size, me = g->direct->rank;
    return guarded(err, errlen, [&] {
        direct_setup(g, stuck_peer);
        // every send first: each fits the socket buffers, so none waits for its reader
        for (int k = 1; k < n; k++) {
            int p = (me + k) % n; // rank order starting after me spreads who is read first
            unsigned char *slice = g->sstage.data() + (size_t)p * g->cap;
            if (slen[p]) std::memcpy(slice, send[p], slen[p]);
            *stuck_peer = p;
            g->sbuf[(size_t)p]->send(0, slen[p], 0);
            g->sbuf[(size_t)p]->waitSend();
        }
        for (int k = 1; k < n; k++) {
            int p = (me - k + n) % n; // the peer that wrote to me first
            *stuck_peer = p;
            g->rbuf[(size_t)p]->waitRecv();
            recv[p] = g->rstage.data() + (size_t)p * g->cap;
        }
        *stuck_peer = -1;
    });
}

struct sr__gloo_buf {
    std::unique_ptr<gloo::transport::UnboundBuffer> ub;
};

extern "C" sr__gloo_buf *sr__gloo_buf_new(sr__gloo *g, void *ptr, size_t len, char *err, size_t errlen) {
    sr__gloo_buf *b = nullptr;
    guarded(err, errlen, [&] { b = new sr__gloo_buf{g->ctx->createUnboundBuffer(ptr, len)}; });
    return b;
}

extern "C" void sr__gloo_buf_free(sr__gloo_buf *b) { delete b; }

extern "C" int sr__gloo_ring_step(sr__gloo *g, int right, sr__gloo_buf *sb, size_t soff, size_t slen, int left,
                                  sr__gloo_buf *rb, size_t roff, size_t rlen, size_t segment,
                                  sr__gloo_segment_fn on_segment, void *arg, int *stuck_peer, char *err,
                                  size_t errlen) {
    *stuck_peer = -1;
    return guarded(err, errlen, [&] {
        g->ctx->connect({right, left}, stuck_peer);
        auto slot = g->ctx->nextSlot();
        for (size_t off = 0; off < slen; off += segment)
            sb->ub->send(right, slot, soff + off, std::min(segment, slen - off));
        for (size_t off = 0; off < rlen; off += segment)
            rb->ub->recv(left, slot, roff + off, std::min(segment, rlen - off));
        for (size_t off = 0; off < rlen; off += segment) {
            *stuck_peer = left;
            rb->ub->waitRecv(g->timeout);
            *stuck_peer = -1;
            if (on_segment) on_segment(arg, off, std::min(segment, rlen - off));
        }
        for (size_t off = 0; off < slen; off += segment) {
            *stuck_peer = right;
            sb->ub->waitSend(g->timeout);
            *stuck_peer = -1;
        }
    });
}

// Broadcast over a tree of halved ranges from the root (gloo_peers.h): each rank receives once,
// from its parent, then sends to its children; log2(n) rounds, n - 1 messages.  The peers a rank
// meets depend on the root: only those are connected (a lazy group's first broadcast from each root
// connects the tree's edges, n - 1 pairs in all).
extern "C" int sr__gloo_broadcast(sr__gloo *g, void *buf, size_t len, int root, int *stuck_peer, char *err,
                                  size_t errlen) {
    *stuck_peer = -1;
    return guarded(err, errlen, [&] {
        int parent, kids[SR__GLOO_MAX_TREE_CHILDREN];
        int nkids = sr__gloo_broadcast_tree(g->ctx->rank, g->ctx->size, root, &parent, kids);
        std::vector<int> children(kids, kids + nkids), peers = children;
        if (parent >= 0) peers.push_back(parent);
        g->ctx->connect(peers, stuck_peer);
        auto ub = g->ctx->createUnboundBuffer(buf, len);
        auto slot = g->ctx->nextSlot();
        if (parent >= 0) {
            ub->recv(parent, slot);
            *stuck_peer = parent;
            ub->waitRecv(g->timeout);
            *stuck_peer = -1;
        }
        for (int c : children) ub->send(c, slot);
        for (int c : children) {
            *stuck_peer = c;
            ub->waitSend(g->timeout);
        }
        *stuck_peer = -1;
    });
}

// A dissemination barrier: in round k every rank signals rank + 2^k and waits for rank - 2^k
// (mod n; gloo_peers.h); after ceil(log2 n) rounds each rank has heard, through some chain, from
// every rank.  Peers: rank +- 2^k, 2 log2(n) of them.
extern "C" int sr__gloo_barrier(sr__gloo *g, int *stuck_peer, char *err, size_t errlen) {
    *stuck_peer = -1;
    return guarded(err, errlen, [&] {
        int round_peers[SR__GLOO_MAX_BARRIER_PEERS];
        int npeers = sr__gloo_barrier_peers(g->ctx->rank, g->ctx->size, round_peers);
        g->ctx->connect(std::vector<int>(round_peers, round_peers + npeers), stuck_peer);
        char token = 0;
        auto ub = g->ctx->createUnboundBuffer(&token, 1);
        for (int k = 0; k < npeers; k += 2) {
            int to = round_peers[k], from = round_peers[k + 1];
            auto slot = g->ctx->nextSlot();
            ub->recv(from, slot);
            ub->send(to, slot);
            *stuck_peer = from;
            ub->waitRecv(g->timeout);
            *stuck_peer = to;
            ub->waitSend(g->timeout);
            *stuck_peer = -1;
        }
    });
}

// The size of the address a pair publishes (a tcp::Address: a sockaddr_storage and a sequence
// number), for bench/store_sim.c's stand-in addresses.
extern "C" size_t sr__gloo_address_len(void) {
    return gloo::transport::tcp::Address(sockaddr_storage{}).bytes().size();
}

extern "C" void sr__gloo_free(sr__gloo *g) { delete g; }
