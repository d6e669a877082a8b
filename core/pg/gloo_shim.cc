// The only C++ in shardrun: Gloo behind a C interface (gloo_shim.h).
#include "pg/gloo_shim.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gloo/barrier.h>
#include <gloo/broadcast.h>
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

// A Gloo context whose pairs connect in parallel.  Gloo's own connectFullMesh connects them one
// after another, and each connect waits for a tick of the device's event loop, which sleeps up to
// 10 ms when idle: 10 ms per peer.  Connecting all peers at once waits for about one tick.
class ParallelContext : public gloo::Context {
  public:
    using gloo::Context::Context;

    // sync: each pair leaves the device's event loop once connected (blocking socket, read by the
    // thread that waits for it), for the direct path's latency
    void connect(StoreAdapter &store, const std::shared_ptr<gloo::transport::Device> &dev, bool sync) {
        auto tc = dev->createContext(rank, size);
        tc->setTimeout(getTimeout());
        std::vector<char> mine;
        for (int i = 0; i < size; i++) {
            if (i == rank) continue;
            auto bytes = tc->createPair(i)->address().bytes();
            mine.insert(mine.end(), bytes.begin(), bytes.end());
        }
        store.set(std::to_string(rank), mine);
        // peer i lists its pairs' addresses in rank order, skipping itself: this rank's is piece
        // `rank` of size - 1 in the lists of higher ranks, piece `rank - 1` in lower ranks' lists:
        // two round trips for all peers
        std::vector<std::string> lower, higher;
        for (int i = 0; i < size; i++)
            if (i != rank) (i < rank ? lower : higher).push_back(std::to_string(i));
        auto from_lower = store.get_pieces(lower, rank - 1, size - 1);
        auto from_higher = store.get_pieces(higher, rank, size - 1);
        std::vector<std::thread> threads;
        std::vector<std::exception_ptr> errors(size);
        for (int i = 0; i < size; i++) {
            if (i == rank) continue;
            threads.emplace_back([&, i] {
                try {
                    tc->getPair(i)->connect(i < rank ? from_lower[(size_t)i] : from_higher[(size_t)(i - rank - 1)]);
                    // leaving the loop waits for one of its ticks: in parallel, one tick in all
                    if (sync) tc->getPair(i)->setSync(true, false);
                } catch (...) { errors[i] = std::current_exception(); }
            });
        }
        for (auto &t : threads) t.join();
        for (auto &e : errors)
            if (e) std::rethrow_exception(e);
        device_ = dev;
        transportContext_ = tc;
    }
};

} // namespace

// The direct path: a second context over the same device whose pairs are in Gloo's sync mode,
// each with one bound send buffer and one bound receive buffer (same slot on both sides) over
// staging memory allocated on first use.  A message then costs one blocking write by the sender
// and one blocking read by the receiving thread itself: no event-loop thread, no ready/ready
// handshake, which matter when ranks outnumber cores.
constexpr int kDirectSlot = 0;

struct sr__gloo {
    std::shared_ptr<ParallelContext> ctx;
    std::chrono::milliseconds timeout;
    std::shared_ptr<ParallelContext> direct;
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
                                     size_t direct_cap, char *err, size_t errlen) {
    sr__gloo *g = nullptr;
    guarded(err, errlen, [&] {
        gloo::transport::tcp::attr attr;
        if (iface && *iface) attr.iface = iface;
        else attr.hostname = hostname;
        auto dev = gloo::transport::tcp::CreateDevice(attr);
        auto timeout = std::chrono::milliseconds((long long)(timeout_s * 1000));
        auto ctx = std::make_shared<ParallelContext>(rank, size);
        ctx->setTimeout(timeout);
        StoreAdapter adapter(store, store_lock, prefix, timeout_s);
        ctx->connect(adapter, dev, false);
        std::shared_ptr<ParallelContext> direct;
        if (direct_cap) {
            direct = std::make_shared<ParallelContext>(rank, size);
            direct->setTimeout(timeout);
            StoreAdapter dadapter(store, store_lock, std::string(prefix) + "direct/", timeout_s);
            direct->connect(dadapter, dev, true);
        }
        g = new sr__gloo{ctx, timeout, direct, direct ? direct_cap : 0, {}, {}, {}, {}, false};
    });
    return g;
}

// Staging memory and bound buffers of the direct path, on first use (most groups never need it).
static void direct_setup(sr__gloo *g) {
    if (g->ready) return;
    int n = g->direct->size;
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
        direct_setup(g);
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

extern "C" int sr__gloo_broadcast(sr__gloo *g, void *buf, size_t len, int root, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        gloo::BroadcastOptions opts(g->ctx);
        opts.setOutput(static_cast<char *>(buf), len);
        opts.setRoot(root);
        opts.setTimeout(g->timeout);
        gloo::broadcast(opts);
    });
}

extern "C" int sr__gloo_barrier(sr__gloo *g, char *err, size_t errlen) {
    return guarded(err, errlen, [&] {
        gloo::BarrierOptions opts(g->ctx);
        opts.setTimeout(g->timeout);
        gloo::barrier(opts);
    });
}

extern "C" void sr__gloo_free(sr__gloo *g) { delete g; }
