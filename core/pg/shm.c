/* The shm transport: all-gather, reduce-scatter, all-reduce, broadcast and barrier between the
   ranks of one host through POSIX shared memory.

   The group's file.  Rank 0 creates one file, /dev/shm/shardrun.<run>.a<attempt>.<group>.<pid>
   (<run> a hash of the run's store token, <group> a hash of the group's store prefix, which holds
   the attempt too: a restarted rank never maps an old attempt's file; <pid> its creator's), sized
   for every rank; every rank reserves the room of its own area in it (posix_fallocate: a full
   /dev/shm fails creation, not a later write with SIGBUS) and maps it whole, once: a peer's area is
   an address computed from its rank, so creating and ending a group of n ranks costs the kernel n
   opens, mappings and unmappings, not n^2 (which made 512 ranks on one host spend most of their
   time in the kernel).  Rank 0 unlinks the name as soon as every rank says (through the store) that
   it mapped the file: from then on nothing is left in /dev/shm whatever happens to the processes.
   When creation fails, every rank that knows the name unlinks it (rank 0 killed meanwhile cannot
   do it itself), and the agent sweeps the run's names whose creator is dead after each attempt
   (sr__shm_sweep): a worker killed inside that window leaves nothing either.  The ranks meet twice
   through the store while creating the group ("pid": rank 0 created the file, "mapped"), each time
   in requests linear in the group's size (pg/meet.h: a counter and one combined table).

   The file: every rank's header side by side (a page fault maps several of them), NSLOT small
   slots of SMALL bytes per rank, then every rank's area: NSLOT slots, each with an input area and a
   result area of SLOT bytes.  The slots are used in rotation; a piece of up to SMALL bytes goes
   through the small slot of its number instead (slot_in: there the ranks' slots lie side by side,
   so reading every peer's takes a page fault per several peers).  A header holds three sequence
   counters, each on its own cache line:
     posted  - the last sequence number whose input this rank wrote into its slot
     reduced - the last sequence number whose reduced slice (all-reduce) is in its result area
     done    - the last sequence number whose peers' data this rank finished reading
   Every piece of every operation takes the group's next sequence number t (the same on every
   rank: pieces depend only on count, dtype and group size) and slot t % NSLOT.  Before writing
   slot t a rank waits until every peer is done with t - NSLOT: the rotation replaces a trailing
   barrier, so an operation returns as soon as this rank has what it needs.

   Reductions, in rank order.  reduce-scatter: rank r folds the pieces of chunk r of ranks 0, 1,
   ..., n-1 in that order (its own straight from its input).  all-reduce: each piece is cut into n
   slices (chunk_start/chunk_len, like Gloo's ring chunks); rank r folds slice r of every rank in
   rank order into its result area, then every rank copies the n results out.  Small all-reduces
   (up to SMALL bytes) skip the second phase: every rank folds the whole buffer of every rank, in
   rank order.  Every rank gets the same bits, on every run, whatever the timing; on 2 ranks they
   are the bits of the gloo backend (a+b = b+a in IEEE arithmetic), on more ranks they can differ
   from Gloo's ring order in the last bit of floating-point sums.

   Waiting: spin briefly, then yield, then sleep on the peer's futex (ranks may outnumber cores,
   and an overlapped collective may wait long while its rank computes), waking every few
   milliseconds to check that the awaited peer still lives (its pid, and the start time it wrote in
   its header: a recycled pid is not the peer), so a dead peer fails the operation at once, and one
   that lives but does not come fails it after the timeout. */
#define _GNU_SOURCE
#include "pg/shm.h"
#include "pg/fault.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/hash64.h"
#include "pg/meet.h"
#include "pg/reduce.h"

#define NSLOT 4
#define SLOT ((size_t)1 << 19)                        /* bytes of a slot's input area, and of its result area */
#define SMALL ((size_t)4096)                          /* all-reduces up to this many bytes run in one phase */
#define AREA ((size_t)NSLOT * 2 * SLOT)               /* a rank's slots in the group's file */
#define SMALLS(n) ((size_t)NSLOT * (size_t)(n)*SMALL) /* the small slots of a group of n ranks */
#define PAGE ((size_t)4096)                           /* the small slots start on a page of their own */
#define MAGIC 0x73726d68735f7631ull                   /* "srmhs_v1" */
/* Busy-wait this long before yielding: a peer on its own core answers within a microsecond, one
   that shares this core runs only once this rank yields (a 30 us spin made an 8-byte all-reduce
   take 32 us on a loaded machine where both ranks shared a core; 4 us: 6 us). */
#define SPIN_NS 4000LL
#define YIELD_NS 500000LL     /* then yield this long before sleeping on the peer's bell */
#define LIVENESS_NS 5000000LL /* how often a sleeping waiter checks the peer's pid and the timeout */

/* outputs of at least this many bytes are written with non-temporal stores (copy_out) */
#define STREAM_MIN ((size_t)8 << 20)

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define CPU_RELAX() __asm__ __volatile__("yield")
#else
#define CPU_RELAX() atomic_signal_fence(memory_order_seq_cst)
#endif

typedef struct shm_head {
    _Alignas(64) _Atomic uint64_t posted;
    _Alignas(64) _Atomic uint64_t reduced;
    _Alignas(64) _Atomic uint64_t done;
    _Alignas(64) _Atomic uint32_t bell; /* futex word: bumped by a publish that has sleepers to wake */
    _Atomic uint32_t sleepers;          /* ranks asleep on this rank's bell */
    _Alignas(64) uint64_t magic;
    int64_t pid;
    int64_t start; /* /proc/<pid>/stat field 22, as the rank read its own at creation */
} shm_head;

typedef struct shm_pg {
    int rank, size;
    uint64_t seq;
    double timeout_s;
    unsigned char *file; /* the group's file, mapped once: the headers, the small slots, the areas */
    size_t file_bytes;
    size_t heads;          /* the bytes of the headers, before the small slots */
    shm_head *head;        /* head[q]: rank q's header */
    unsigned char *smalls; /* the small slots (slot_in) */
    unsigned char *areas;  /* areas + q * AREA: rank q's slots */
    long long *pid;        /* each rank's pid */
} shm_pg;

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A process's start time in clock ticks since boot, or -1 when it is gone or a zombie. */
static long long start_time(long long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (!p || p[1] != ' ') return -1;
    char state = p[2];
    if (state == 'Z' || state == 'X' || state == 'x') return -1;
    /* fields after the name: 3 state ... 22 starttime */
    p += 2;
    for (int field = 3; field < 22; field++) {
        p = strchr(p, ' ');
        if (!p) return -1;
        p++;
    }
    return strtoll(p, NULL, 10);
}

/* The peer's start time comes from its own header, written before it said it mapped the file. */
static int peer_alive(shm_pg *p, int q) { return start_time(p->pid[q]) == p->head[q].start; }

/* dst <- src.  stream: dst is a large output nobody read lately (an all-gather's or broadcast's
   receive buffer), so on x86 it is written with non-temporal stores: no read of each destination
   line from memory before it is overwritten, and no eviction of the slots the peers still read.
   They are weakly ordered: fence_out() before the caller could hand dst to another thread. */
static void copy_out(void *dst, const void *src, size_t len, int stream) {
#if defined(__x86_64__)
    if (stream && len >= 256) {
        unsigned char *d = dst;
        const unsigned char *s = src;
        size_t head = (16 - ((uintptr_t)d & 15)) & 15;
        memcpy(d, s, head);
        d += head, s += head, len -= head;
        for (; len >= 64; d += 64, s += 64, len -= 64) {
            __m128i a = _mm_loadu_si128((const __m128i *)s), b = _mm_loadu_si128((const __m128i *)(s + 16));
            __m128i c = _mm_loadu_si128((const __m128i *)(s + 32)), e = _mm_loadu_si128((const __m128i *)(s + 48));
            _mm_stream_si128((__m128i *)d, a);
            _mm_stream_si128((__m128i *)(d + 16), b);
            _mm_stream_si128((__m128i *)(d + 32), c);
            _mm_stream_si128((__m128i *)(d + 48), e);
        }
        memcpy(d, s, len);
        return;
    }
#endif
    (void)stream;
    memcpy(dst, src, len);
}

static void fence_out(void) {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

/* Rank q's input area for piece t of `bytes` bytes (the same on every rank).  Up to SMALL bytes it
   is in the small slots, where slot t of every rank lies side by side: a rank that reads every
   peer's (an all-reduce of a few numbers) takes a page fault per 16 peers or so (the kernel maps
   the neighbouring pages of a read fault), not one per peer. */
static unsigned char *slot_in(shm_pg *p, int q, uint64_t t, size_t bytes) {
    if (bytes <= SMALL) return p->smalls + ((size_t)(t % NSLOT) * (size_t)p->size + (size_t)q) * SMALL;
    return p->areas + (size_t)q * AREA + (size_t)(t % NSLOT) * 2 * SLOT;
}
static unsigned char *slot_out(shm_pg *p, int q, uint64_t t) {
    return p->areas + (size_t)q * AREA + (size_t)(t % NSLOT) * 2 * SLOT + SLOT;
}

/* Sleeps on peer q's bell until it rings or `ns` pass, unless the flag got there meanwhile.  The
   sleeper count goes up before the flag is read again and the publisher stores its flag before it
   reads the count (both sequentially consistent): either this waiter sees the flag, or the
   publisher sees the sleeper and rings. */
static void sleep_on(shm_head *h, _Atomic uint64_t *flag, uint64_t want, long long ns) {
    atomic_fetch_add(&h->sleepers, 1);
    uint32_t bell = atomic_load(&h->bell);
    if (atomic_load(flag) < want) {
        struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
        syscall(SYS_futex, (uint32_t *)&h->bell, FUTEX_WAIT, bell, &ts, NULL, 0);
    }
    atomic_fetch_sub(&h->sleepers, 1);
}

/* Waits until peer q's counter reaches `want`.  0, SR__PG_TIMEOUT (*stuck = q), or -1 when q died. */
static int wait_for(shm_pg *p, int q, _Atomic uint64_t *flag, uint64_t want, int *stuck, char *err, size_t errlen) {
    if (atomic_load_explicit(flag, memory_order_acquire) >= want) return 0;
    long long t0 = now_ns(), next_check = t0 + LIVENESS_NS, deadline = t0 + (long long)(p->timeout_s * 1e9);
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(flag, memory_order_acquire) >= want) return 0;
        if (i % 64) {
            CPU_RELAX();
            continue;
        }
        long long now = now_ns();
        if (now - t0 < SPIN_NS) continue;
        if (now - t0 < YIELD_NS) sched_yield();
        else sleep_on(&p->head[q], flag, want, LIVENESS_NS);
        if (now < next_check) continue;
        next_check = now + LIVENESS_NS;
        if (atomic_load_explicit(flag, memory_order_acquire) >= want) return 0;
        if (!peer_alive(p, q)) {
            snprintf(err, errlen, "shm: rank %d (pid %lld) exited", q, p->pid[q]);
            *stuck = q;
            return -1;
        }
        if (now >= deadline) {
            snprintf(err, errlen, "shm: waited for rank %d", q);
            *stuck = q;
            return SR__PG_TIMEOUT;
        }
    }
}

static int wait_all(shm_pg *p, int which, uint64_t want, int *stuck, char *err, size_t errlen) {
    for (int q = 0; q < p->size; q++) {
        if (q == p->rank) continue;
        shm_head *h = &p->head[q];
        _Atomic uint64_t *f = which == 0 ? &h->posted : which == 1 ? &h->reduced : &h->done;
        int rc = wait_for(p, q, f, want, stuck, err, errlen);
        if (rc) return rc;
    }
    return 0;
}

/* The next piece's sequence number, once every peer has finished with the slot it reuses. */
static int next_piece(shm_pg *p, uint64_t *t, int *stuck, char *err, size_t errlen) {
    *t = ++p->seq;
    return *t > NSLOT ? wait_all(p, 2, *t - NSLOT, stuck, err, errlen) : 0;
}

/* Sets one of this rank's counters and rings its bell when a peer sleeps on it. */
static void publish(shm_pg *p, _Atomic uint64_t *flag, uint64_t t) {
    shm_head *h = &p->head[p->rank];
    atomic_store(flag, t);
    if (atomic_load(&h->sleepers)) {
        atomic_fetch_add(&h->bell, 1);
        syscall(SYS_futex, (uint32_t *)&h->bell, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
    }
}

static size_t chunk_start(size_t count, int n, int i) {
    size_t q = count / (size_t)n, r = count % (size_t)n, k = (size_t)i;
    return q * k + (k < r ? k : r);
}
static size_t chunk_len(size_t count, int n, int i) { return count / (size_t)n + ((size_t)i < count % (size_t)n); }

static int shm_all_gather(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, int *stuck, char *err,
                          size_t errlen) {
    shm_pg *p = impl;
    size_t bytes = count * sr_dtype_size(dt), total = bytes * (size_t)p->size;
    const unsigned char *in = send;
    unsigned char *out = recv, *own = out + (size_t)p->rank * bytes;
    if (p->size == 1) {
        if (own != in) memmove(own, in, bytes);
        return 0;
    }
    /* my part goes from my slot (still in cache) to its place, piece by piece, unless it is in place
       already or send overlaps recv elsewhere (then it moves last, in one go) */
    int in_place = own == in, overlap = !in_place && in < out + total && out < in + bytes;
    int stream = total >= STREAM_MIN;
    for (size_t off = 0; off < bytes; off += SLOT) {
        size_t len = bytes - off < SLOT ? bytes - off : SLOT;
        uint64_t t;
        int rc = next_piece(p, &t, stuck, err, errlen);
        if (rc) return rc;
        unsigned char *mine = slot_in(p, p->rank, t, len);
        memcpy(mine, in + off, len);
        publish(p, &p->head[p->rank].posted, t);
        if (!in_place && !overlap) copy_out(own + off, mine, len, stream);
        for (int k = 1; k < p->size; k++) {
            int q = (p->rank + k) % p->size; /* ranks start on different peers */
            if ((rc = wait_for(p, q, &p->head[q].posted, t, stuck, err, errlen))) return rc;
            copy_out(out + (size_t)q * bytes + off, slot_in(p, q, t, len), len, stream);
        }
        publish(p, &p->head[p->rank].done, t);
    }
    if (overlap) memmove(own, in, bytes);
    fence_out();
    return 0;
}

static int shm_reduce_scatter(void *impl, const void *send, void *recv, size_t count, sr_dtype dt, sr_redop op,
                              int *stuck, char *err, size_t errlen) {
    shm_pg *p = impl;
    int n = p->size, me = p->rank;
    size_t es = sr_dtype_size(dt), per = SLOT / ((size_t)n * es);
    const unsigned char *in = send;
    unsigned char *out = recv;
    if (n == 1) {
        if (out != in) memmove(out, in, count * es);
        return 0;
    }
    /* recv inside send: my own input may be overwritten by the fold, so it goes through my slot */
    int overlap = out < in + (size_t)n * count * es && in < out + count * es;
    for (size_t e0 = 0; e0 < count; e0 += per) {
        size_t k = count - e0 < per ? count - e0 : per, kb = k * es;
        uint64_t t;
        int rc = next_piece(p, &t, stuck, err, errlen);
        if (rc) return rc;
        unsigned char *mine = slot_in(p, me, t, (size_t)n * kb);
        for (int q = 0; q < n; q++)
            if (q != me || overlap) memcpy(mine + (size_t)q * kb, in + ((size_t)q * count + e0) * es, kb);
        publish(p, &p->head[me].posted, t);
        unsigned char *dst = out + e0 * es;
        /* SHARDRUN_DEBUG_PG_FAULT=shm_reduce_scatter_index: ranks > 0 fold their left neighbour's slice */
        size_t mine_at = (size_t)(me > 0 && sr__pg_fault() == SR__PG_FAULT_SHM_RS_INDEX ? me - 1 : me) * kb;
        for (int q = 0; q < n; q++) {
            const unsigned char *src =
                q == me && !overlap ? in + ((size_t)me * count + e0) * es : slot_in(p, q, t, (size_t)n * kb) + mine_at;
            if (q != me && (rc = wait_for(p, q, &p->head[q].posted, t, stuck, err, errlen))) return rc;
            if (q == 0) continue;
            if (q == 1)
                sr__reduce_into(dst, me == 0 && !overlap ? in + e0 * es : slot_in(p, 0, t, (size_t)n * kb) + mine_at,
                                src, k, dt, op);
            else sr__reduce(dst, src, k, dt, op);
        }
        if (op == SR_AVG) sr__divide(dst, k, dt, n);
        publish(p, &p->head[me].done, t);
    }
    return 0;
}

static int shm_all_reduce(void *impl, void *buf, size_t count, sr_dtype dt, sr_redop op, int *stuck, char *err,
                          size_t errlen) {
    shm_pg *p = impl;
    int n = p->size, me = p->rank;
    size_t es = sr_dtype_size(dt), per = SLOT / es;
    unsigned char *b = buf;
    if (n == 1) return 0;
    int small = count * es <= SMALL;
    for (size_t e0 = 0; e0 < count; e0 += per) {
        size_t k = count - e0 < per ? count - e0 : per;
        unsigned char *piece = b + e0 * es;
        uint64_t t;
        int rc = next_piece(p, &t, stuck, err, errlen);
        if (rc) return rc;
        memcpy(slot_in(p, me, t, k * es), piece, k * es);
        publish(p, &p->head[me].posted, t);
        /* my slice (small: all of it), folded in rank order */
        size_t s0 = small ? 0 : chunk_start(k, n, me), sl = small ? k : chunk_len(k, n, me);
        unsigned char *dst = small ? piece : slot_out(p, me, t);
        if (sl) {
            for (int q = 0; q < n; q++)
                if (q != me && (rc = wait_for(p, q, &p->head[q].posted, t, stuck, err, errlen))) return rc;
            sr__reduce_into(dst, slot_in(p, 0, t, k * es) + s0 * es, slot_in(p, 1, t, k * es) + s0 * es, sl, dt, op);
            for (int q = 2; q < n; q++) sr__reduce(dst, slot_in(p, q, t, k * es) + s0 * es, sl, dt, op);
        }
        if (sl && op == SR_AVG) sr__divide(dst, sl, dt, n);
        if (!small) {
            publish(p, &p->head[me].reduced, t);
            for (int j = 0; j < n; j++) {
                int q = (me + j) % n;
                size_t qs = chunk_start(k, n, q), ql = chunk_len(k, n, q);
                if (q != me && (rc = wait_for(p, q, &p->head[q].reduced, t, stuck, err, errlen))) return rc;
                if (ql) memcpy(piece + qs * es, slot_out(p, q, t), ql * es);
            }
        }
        publish(p, &p->head[me].done, t);
    }
    return 0;
}

static int shm_broadcast(void *impl, void *buf, size_t count, sr_dtype dt, int root, int *stuck, char *err,
                         size_t errlen) {
    shm_pg *p = impl;
    size_t bytes = count * sr_dtype_size(dt);
    unsigned char *b = buf;
    if (p->size == 1) return 0;
    for (size_t off = 0; off < bytes; off += SLOT) {
        size_t len = bytes - off < SLOT ? bytes - off : SLOT;
        uint64_t t;
        int rc = next_piece(p, &t, stuck, err, errlen);
        if (rc) return rc;
        if (p->rank == root) {
            memcpy(slot_in(p, root, t, len), b + off, len);
            publish(p, &p->head[root].posted, t);
        } else {
            if ((rc = wait_for(p, root, &p->head[root].posted, t, stuck, err, errlen))) return rc;
            copy_out(b + off, slot_in(p, root, t, len), len, bytes >= STREAM_MIN);
        }
        publish(p, &p->head[p->rank].done, t);
    }
    fence_out();
    return 0;
}

static int shm_barrier(void *impl, int *stuck, char *err, size_t errlen) {
    shm_pg *p = impl;
    if (p->size == 1) return 0;
    uint64_t t = ++p->seq;
    publish(p, &p->head[p->rank].posted, t);
    int rc = wait_all(p, 0, t, stuck, err, errlen);
    if (rc == 0) publish(p, &p->head[p->rank].done, t);
    return rc;
}

void sr__shm_host_id(char *out, size_t len, const char *extra) {
    char host[256] = "", boot[64] = "", ns[3][64] = {"", "", ""};
    if (gethostname(host, sizeof host) != 0) host[0] = 0;
    host[sizeof host - 1] = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f) {
        if (!fgets(boot, sizeof boot, f)) boot[0] = 0;
        fclose(f);
        boot[strcspn(boot, "\n")] = 0;
    }
    if (!boot[0]) snprintf(boot, sizeof boot, "unknown-%ld", (long)getpid()); /* matches nobody */
    static const char *const names[3] = {"/proc/self/ns/ipc", "/proc/self/ns/mnt", "/proc/self/ns/pid"};
    for (int i = 0; i < 3; i++) {
        ssize_t n = readlink(names[i], ns[i], sizeof ns[i] - 1);
        ns[i][n > 0 ? n : 0] = 0;
    }
    snprintf(out, len, "%s|%s|%s|%s|%s|%s", host, boot, ns[0], ns[1], ns[2], extra ? extra : "");
}

/* /shardrun.<run>.a<attempt>.<group>.<pid of its creator, rank 0> */
static void seg_name(const sr__pg_setup *s, long long pid, char *out, size_t len) {
    snprintf(out, len, "/shardrun.%016llx.a%d.%016llx.%lld", (unsigned long long)s->run_hash, s->attempt,
             (unsigned long long)sr__hash64(s->prefix, strlen(s->prefix), 0x73686d), pid);
}

/* After a failed creation: the group's name, by its creator or by any rank that learnt its pid (a
   creator killed meanwhile cannot unlink it itself). */
static void unlink_group(const sr__pg_setup *s, const long long *pids) {
    char name[160];
    if (s->rank == 0 || (pids && pids[0] > 0)) {
        seg_name(s, s->rank == 0 ? (long long)getpid() : pids[0], name, sizeof name);
        shm_unlink(name);
    }
}

unsigned long long sr__shm_run_hash(const char *token) { return sr__hash64(token, strlen(token), 0x72756e); }

int sr__shm_sweep(const char *token) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "shardrun.%016llx.", sr__shm_run_hash(token));
    DIR *d = opendir("/dev/shm");
    if (!d) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const char *dot = strrchr(e->d_name, '.');
        if (strncmp(e->d_name, prefix, strlen(prefix)) || !dot) continue;
        char *end;
        long long pid = strtoll(dot + 1, &end, 10);
        if (*end || pid <= 0 || start_time(pid) >= 0) continue; /* its creator lives: it may be mapping it */
        char name[300];
        snprintf(name, sizeof name, "/%s", e->d_name);
        n += shm_unlink(name) == 0;
    }
    closedir(d);
    return n;
}

/* One meeting of creation (pg/meet.h): every rank's number at `stage` ("pid": its segment's
   creator, -1 when it could not create it, -2 out of memory; "mapped": 1 when it mapped every
   segment, 0 when not, 2 out of memory, 3 failed before) into vals.  0, or -1 with the message: a
   rank that did not come in time (SR__SHM_LATE), memory out (SR__SHM_OOM), or the store's error. */
static int meet(const sr__pg_setup *s, const char *stage, long long value, long long *vals, char *err, size_t errlen) {
    char why[1200];
    int who, rc = sr__pg_meet(s, stage, value, vals, &who, why, sizeof why);
    const char *did = !strcmp(stage, "pid") ? "created" : "mapped";
    if (rc == SR__MEET_LATE)
        snprintf(err, errlen, SR__SHM_LATE "%s its segment within %gs (missing: rank%s %.1000s)", did, s->timeout_s,
                 strchr(why, ',') ? "s" : "", why);
    else if (rc == SR__MEET_OOM)
        snprintf(err, errlen, SR__SHM_OOM " on rank %d while the ranks %s their segments: %.800s", who, did, why);
    else if (rc) snprintf(err, errlen, "shm: store error while the ranks %s their segments: %.800s", did, why);
    return rc ? -1 : 0;
}

static void shm_destroy(void *impl) {
    shm_pg *p = impl;
    if (p->file) munmap(p->file, p->file_bytes);
    free(p->pid);
    free(p);
}

/* Rank 0 creates the group's file, sized for every rank and with room reserved for the headers and
   its own area, and maps it: 0 or an errno. */
static int create_file(shm_pg *p, const char *name) {
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && errno == EEXIST) { /* cannot be this run's: its names are unique; a leftover */
        shm_unlink(name);
        fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    }
    if (fd < 0) return errno;
    int e = ftruncate(fd, (off_t)p->file_bytes) != 0 ? errno : 0;
    /* no room in /dev/shm: an error now, not SIGBUS later */
    if (!e) e = posix_fallocate(fd, 0, (off_t)(p->heads + SMALLS(p->size) + AREA));
    if (!e) {
        void *m = mmap(NULL, p->file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) e = errno;
        else p->file = m;
    }
    close(fd);
    return e;
}

/* Ranks > 0 open rank 0's file, reserve room for their own area and map it: 0, an errno, or ESTALE
   when the file is not what rank 0 created (its header) or rank 0 is gone. */
static int open_file(shm_pg *p, const char *name) {
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0) return errno;
    struct stat st;
    int e = fstat(fd, &st) != 0 ? errno : (size_t)st.st_size != p->file_bytes ? ESTALE : 0;
    if (!e) e = posix_fallocate(fd, (off_t)(p->heads + SMALLS(p->size) + (size_t)p->rank * AREA), (off_t)AREA);
    if (!e) {
        void *m = mmap(NULL, p->file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (m == MAP_FAILED) e = errno;
        else p->file = m;
    }
    close(fd);
    const shm_head *h0 = (const shm_head *)p->file;
    if (!e && (h0->magic != MAGIC || h0->pid != p->pid[0] || h0->start < 0 || start_time(p->pid[0]) != h0->start))
        e = ESTALE;
    return e;
}

/* Writes this rank's header, which the peers read once every rank said it mapped the file
   (rank 0's: once it said it created it). */
static void write_head(shm_pg *p) {
    p->head = (shm_head *)p->file;
    p->smalls = p->file + p->heads;
    p->areas = p->smalls + SMALLS(p->size);
    p->head[p->rank].magic = MAGIC;
    p->head[p->rank].pid = getpid();
    p->head[p->rank].start = start_time(getpid());
}

/* Creation is collective and so are its failures: each step's outcome goes through the store, so a
   rank that cannot create or map the file makes every rank fail the same way, at once, instead of
   leaving the others waiting (pg.c may then fall back to Gloo on all of them alike). */
static void *shm_create(void *parent, const sr__pg_setup *s, char *err, size_t errlen) {
    (void)parent;
    shm_pg *p = sr__calloc(1, sizeof *p);
    if (!p) {
        if (s->size > 1 && (size_t)s->size * 8 <= SLOT) sr__pg_meet_say(s, "pid", -2);
        snprintf(err, errlen, SR__SHM_OOM " for a group of %d ranks (%zu bytes)", s->size, sizeof *p);
        return NULL;
    }
    p->rank = s->rank;
    p->size = s->size;
    p->timeout_s = s->timeout_s;
    if (s->size == 1) return p;
    if ((size_t)s->size * 8 > SLOT) { /* a reduce-scatter piece must hold one int64 of every rank */
        snprintf(err, errlen, "shm: groups of more than %zu ranks are not supported; set [torch] transport = tcp",
                 SLOT / 8);
        free(p);
        return NULL;
    }
    /* the headers side by side at the start (a fault maps many of them at once), the small slots,
       then the areas */
    p->heads = ((size_t)s->size * sizeof(shm_head) + PAGE - 1) / PAGE * PAGE;
    p->file_bytes = p->heads + SMALLS(s->size) + (size_t)s->size * AREA;
    p->pid = sr__calloc((size_t)s->size, sizeof *p->pid);
    long long *ok = sr__calloc((size_t)s->size, sizeof *ok);
    if (!p->pid || !ok) {
        sr__pg_meet_say(s, "pid", -2);
        snprintf(err, errlen, SR__SHM_OOM " for a group of %d ranks", s->size);
        free(ok);
        shm_destroy(p);
        return NULL;
    }
    char name[160], mine_err[512] = "";
    int e = 0;
    if (s->rank == 0) {
        seg_name(s, getpid(), name, sizeof name);
        if ((e = create_file(p, name)))
            snprintf(mine_err, sizeof mine_err,
                     "shm: cannot create /dev/shm%s (%zu bytes): %s; free room in /dev/shm "
                     "or set [torch] transport = tcp",
                     name, p->file_bytes, strerror(e));
        else write_head(p);
    }
    if (meet(s, "pid", e ? -1 : (long long)getpid(), p->pid, err, errlen)) {
        /* a failure of this rank's alone (the store, a timeout, memory) must not leave the others
           waiting for it at the next meeting; where every rank fails here alike, nobody meets there */
        sr__pg_meet_say(s, "mapped", 3);
        goto fail;
    }
    for (int q = 0; q < s->size; q++)
        if (p->pid[q] < 0) {
            if (p->pid[q] == -2) snprintf(err, errlen, SR__SHM_OOM " on rank %d while creating the group", q);
            else if (mine_err[0]) snprintf(err, errlen, "%s", mine_err);
            else
                snprintf(err, errlen,
                         "shm: rank %d could not create the group's file in /dev/shm; free room there or "
                         "set [torch] transport = tcp",
                         q);
            goto fail;
        }
    if (s->rank > 0) {
        seg_name(s, p->pid[0], name, sizeof name);
        if ((e = open_file(p, name)) == ENOSPC || e == EFBIG)
            snprintf(mine_err, sizeof mine_err,
                     "shm: cannot reserve rank %d's %zu bytes in /dev/shm%s: %s; free room in /dev/shm "
                     "or set [torch] transport = tcp",
                     s->rank, AREA, name, strerror(e));
        else if (e)
            snprintf(mine_err, sizeof mine_err,
                     "shm: cannot map rank 0's file /dev/shm%s: %s (do the ranks "
                     "share /dev/shm? else set [torch] transport = tcp)",
                     name, e == ESTALE ? "not that rank's, or it exited" : strerror(e));
        else write_head(p);
    }
    if (meet(s, "mapped", mine_err[0] ? 0 : 1, ok, err, errlen)) goto fail;
    for (int q = 0; q < s->size; q++)
        if (ok[q] != 1) {
            if (ok[q] == 2) snprintf(err, errlen, SR__SHM_OOM " on rank %d while mapping the group's file", q);
            else if (mine_err[0]) snprintf(err, errlen, "%s", mine_err);
            else if (ok[q] == 3)
                snprintf(err, errlen, "shm: rank %d failed before mapping the group's file (its own error says why)",
                         q);
            else
                snprintf(err, errlen,
                         "shm: rank %d could not map the group's file (do the ranks share "
                         "/dev/shm? else set [torch] transport = tcp)",
                         q);
            goto fail;
        }
    free(ok);
    if (s->rank == 0) {
        seg_name(s, getpid(), name, sizeof name);
        shm_unlink(name); /* everyone holds a mapping: the name has served */
    }
    return p;
fail:
    free(ok);
    unlink_group(s, p->pid);
    shm_destroy(p);
    return NULL;
}

const sr__pg_backend_ops sr__shm_backend = {
    "shm", shm_all_gather, shm_reduce_scatter, shm_all_reduce, shm_broadcast, shm_barrier, shm_create, shm_destroy,
};
