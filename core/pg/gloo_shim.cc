// The only C++ in shardrun: Gloo behind a C interface (gloo_shim.h).
#include "pg/gloo_shim.h"

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
#include <gloo/rendezvous/store.h>
#include <gloo/transport/tcp/device.h>

namespace {

// gloo::rendezvous::Store over shardrun's store.  get() blocks until the key exists, as Gloo
// expects; a timeout names the missing keys.
class StoreAdapter : public gloo::rendezvous::Store {
  public:
    StoreAdapter(sr__store *s, pthread_mutex_t *lock, std::string prefix, double timeout_s)
        : s_(s), lock_(lock), prefix_(std::move(prefix)), timeout_s_(timeout_s) {}

    void set(const std::string &key, const std::vector<char> &data) override {
        Locked l(lock_);
        if (sr__store_set(s_, (prefix_ + key).c_str(), data.data(), data.size()) != 0)
            throw gloo::IoException(std::string("store set failed: ") + sr__store_error(s_));
    }

    std::vector<char> get(const std::string &key) override {
        wait({key}, std::chrono::milliseconds((long long)(timeout_s_ * 1000)));
        Locked l(lock_);
        void *v = nullptr;
        size_t len = 0;
        if (sr__store_get(s_, (prefix_ + key).c_str(), &v, &len) != 0)
            throw gloo::IoException(std::string("store get failed: ") + sr__store_error(s_));
        std::vector<char> out((char *)v, (char *)v + len);
        free(v);
        return out;
    }

    // Part `piece` of `pieces` equal parts of each key's value, once all exist: one round trip for
    // all the keys, and only the bytes this rank needs (a peer's list of N-1 pair addresses would
    // otherwise travel whole to each of the N-1 ranks: N^3 bytes through the store for the world,
    // in N^2 round trips).
    std::vector<std::vector<char>> get_pieces(const std::vector<std::string> &keys, int piece, int pieces) {
        std::vector<std::vector<char>> out(keys.size());
        if (keys.empty()) return out;
        std::vector<std::string> full;
        std::vector<const char *> ptrs;
        for (auto &k : keys) full.push_back(prefix_ + k);
        for (auto &k : full) ptrs.push_back(k.c_str());
        std::vector<void *> v(keys.size(), nullptr);
        std::vector<size_t> len(keys.size(), 0);
        char missing[1024] = "";
        Locked l(lock_);
        int rc = sr__store_fetch_pieces(s_, ptrs.data(), (int)ptrs.size(), piece, pieces, timeout_s_, v.data(),
                                        len.data(), missing, sizeof missing);
        if (rc == 1) throw gloo::IoException(std::string("timed out waiting for store keys ") + missing);
        if (rc != 0) throw gloo::IoException(std::string("store get failed: ") + sr__store_error(s_));
        for (size_t i = 0; i < keys.size(); i++) {
            out[i].assign((char *)v[i], (char *)v[i] + len[i]);
            free(v[i]);
        }
        return out;
    }

    // The key's value if it exists now (no waiting): true and *out, or false.
    bool try_get(const std::string &key, std::vector<char> *out) {
        Locked l(lock_);
        void *v = nullptr;
        size_t len = 0;
        int rc = sr__store_get(s_, (prefix_ + key).c_str(), &v, &len);
        if (rc < 0) throw gloo::IoException(std::string("store get failed: ") + sr__store_error(s_));
        if (rc == 0) out->assign((char *)v, (char *)v + len);
        free(v);
        return rc == 0;
    }

    void wait(const std::vector<std::string> &keys) override {
        wait(keys, std::chrono::milliseconds((long long)(timeout_s_ * 1000)));
    }

    void wait(const std::vector<std::string> &keys, const std::chrono::milliseconds &timeout) override {
        std::vector<std::string> full;
        std::vector<const char *> ptrs;
        for (auto &k : keys) full.push_back(prefix_ + k);
        for (auto &k : full) ptrs.push_back(k.c_str());
        char missing[1024] = "";
        Locked l(lock_);
        int rc = sr__store_wait(s_, ptrs.data(), (int)ptrs.size(), timeout.count() / 1000.0, missing, sizeof missing);
        if (rc == 1) throw gloo::IoException(std::string("timed out waiting for store keys ") + missing);
        if (rc != 0) throw gloo::IoException(std::string("store wait failed: ") + sr__store_error(s_));
    }

  private:
    struct Locked {
        explicit Locked(pthread_mutex_t *m) : m_(m) { pthread_mutex_lock(m_); }
        ~Locked() { pthread_mutex_unlock(m_); }
        pthread_mutex_t *m_;
    };
    sr__store *s_;
    pthread_mutex_t *lock_;
    std::string prefix_;
    double timeout_s_;
};

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

// The key of the address that rank `from`'s pair to rank `to` listens on (lazily connected groups).
std::string pair_key(int from, int to) { return "pair/" + std::to_string(from) + "/" + std::to_string(to); }

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
    PeerContext(int rank, int size, const std::shared_ptr<gloo::transport::Device> &dev, StoreAdapter store,
                std::chrono::milliseconds timeout, bool sync)
        : gloo::Context(rank, size), store_(std::move(store)), sync_(sync), connected_((size_t)size, 0) {
        setTimeout(timeout);
        device_ = dev;
        transportContext_ = dev->createContext(rank, size);
        transportContext_->setTimeout(timeout);
    }

    // Every pair, at once: each rank publishes its pairs' addresses as one value, in rank order
    // skipping itself; this rank's is piece `rank` of size - 1 in the lists of higher ranks, piece
    // `rank - 1` in lower ranks' lists: two round trips for all peers.
    void connect_all() {
        std::vector<char> mine;
        std::vector<int> peers;
        for (int i = 0; i < size; i++) {
            if (i == rank) continue;
            auto bytes = transportContext_->createPair(i)->address().bytes();
            mine.insert(mine.end(), bytes.begin(), bytes.end());
            peers.push_back(i);
        }
        store_.set(std::to_string(rank), mine);
        std::vector<std::string> lower, higher;
        for (int i = 0; i < size; i++)
            if (i != rank) (i < rank ? lower : higher).push_back(std::to_string(i));
        auto addrs = store_.get_pieces(lower, rank - 1, size - 1);
        auto from_higher = store_.get_pieces(higher, rank, size - 1);
        addrs.insert(addrs.end(), from_higher.begin(), from_higher.end());
        connect_pairs(peers, addrs);
    }

    // The pairs to `peers` that are not connected yet (both ends of a pair connect it in the same
    // operation): create each and publish its address, then connect each peer as soon as its
    // address is there, each in a thread of its own.  Not all at once, once all are there: a rank
    // whose one peer never comes would leave its other peers waiting in Gloo's connect (five
    // timeouts) instead of timing out in the operation beside it.  A peer that does not come
    // within the timeout: *stuck.
    void connect(const std::vector<int> &peers, int *stuck) {
        std::vector<int> fresh;
        for (int p : peers)
            if (p != rank && !connected_[(size_t)p] && std::find(fresh.begin(), fresh.end(), p) == fresh.end())
                fresh.push_back(p);
        if (fresh.empty()) return;
        for (int p : fresh) store_.set(pair_key(rank, p), transportContext_->createPair(p)->address().bytes());
        std::vector<std::vector<char>> addrs(fresh.size());
        std::vector<std::exception_ptr> errors(fresh.size());
        std::vector<std::thread> threads;
        std::vector<char> started(fresh.size(), 0);
        size_t waiting = fresh.size();
        auto deadline = std::chrono::steady_clock::now() + getTimeout();
        auto pause = std::chrono::microseconds(200);
        try {
            while (waiting) {
                for (size_t i = 0; i < fresh.size(); i++) {
                    if (started[i] || !store_.try_get(pair_key(fresh[i], rank), &addrs[i])) continue;
                    started[i] = 1, waiting--;
                    threads.emplace_back([this, &fresh, &addrs, &errors, i] {
                        try {
                            connect_one(fresh[i], addrs[i]);
                        } catch (...) { errors[i] = std::current_exception(); }
                    });
                }
                if (!waiting || std::chrono::steady_clock::now() >= deadline) break;
                std::this_thread::sleep_for(pause); // polls the store: a few requests while peers arrive
                pause = std::min(pause * 2, std::chrono::microseconds(20000));
            }
        } catch (...) {
            for (auto &t : threads) t.join();
            throw;
        }
        for (auto &t : threads) t.join();
        for (size_t i = 0; i < fresh.size() && waiting; i++)
            if (!started[i]) {
                *stuck = fresh[i];
                char secs[32];
                std::snprintf(secs, sizeof secs, "%gs", getTimeout().count() / 1000.0);
                throw gloo::IoException("rank " + std::to_string(fresh[i]) + " did not come to connect within " + secs +
                                        " (no address at " + pair_key(fresh[i], rank) + ")");
            }
        for (auto &e : errors)
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

    StoreAdapter store_;
    bool sync_;
    std::vector<char> connected_;
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
        auto ctx = std::make_shared<PeerContext>(rank, size, dev, StoreAdapter(store, store_lock, prefix, timeout_s),
                                                 timeout, false);
        if (!lazy) ctx->connect_all();
        std::shared_ptr<PeerContext> direct;
        if (direct_cap) {
            direct = std::make_shared<PeerContext>(
                rank, size, dev, StoreAdapter(store, store_lock, std::string(prefix) + "direct/", timeout_s), timeout,
                true);
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

// Broadcast over a tree of halved ranges, in ranks counted from the root (v = rank - root mod n):
// the holder of range [lo, hi) sends to the first rank of its upper half, [mid, hi), which then
// holds that half, while the holder keeps [lo, mid).  Each rank receives once, from its parent,
// then sends to its children; log2(n) rounds, n - 1 messages.  The peers a rank meets depend on the
// root: only those are connected (a lazy group's first broadcast from each root connects the tree's
// edges, n - 1 pairs in all).
extern "C" int sr__gloo_broadcast(sr__gloo *g, void *buf, size_t len, int root, int *stuck_peer, char *err,
                                  size_t errlen) {
    *stuck_peer = -1;
    return guarded(err, errlen, [&] {
        int n = g->ctx->size, v = (g->ctx->rank - root + n) % n, parent = -1;
        std::vector<int> children, peers;
        for (int lo = 0, hi = n; hi - lo > 1;) {
            int mid = lo + (hi - lo + 1) / 2;
            if (v < mid) {
                if (v == lo) children.push_back((mid + root) % n);
                hi = mid;
            } else {
                if (v == mid) parent = (lo + root) % n;
                lo = mid;
            }
        }
        peers = children;
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
// (mod n); after ceil(log2 n) rounds each rank has heard, through some chain, from every rank.
// Peers: rank +- 2^k, 2 log2(n) of them.
extern "C" int sr__gloo_barrier(sr__gloo *g, int *stuck_peer, char *err, size_t errlen) {
    *stuck_peer = -1;
    return guarded(err, errlen, [&] {
        int n = g->ctx->size, me = g->ctx->rank;
        std::vector<int> peers;
        for (int d = 1; d < n; d <<= 1) {
            peers.push_back((me + d) % n);
            peers.push_back((me - d % n + n) % n);
        }
        g->ctx->connect(peers, stuck_peer);
        char token = 0;
        auto ub = g->ctx->createUnboundBuffer(&token, 1);
        for (int d = 1; d < n; d <<= 1) {
            int to = (me + d) % n, from = (me - d % n + n) % n;
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

extern "C" void sr__gloo_free(sr__gloo *g) { delete g; }
