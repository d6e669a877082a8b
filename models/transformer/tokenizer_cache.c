/*
 * The cache of encoded pieces a tokenizer shares with its clones (tokenizer_impl.h,
 * tf__shared_cache_*), so that N threads compute each piece's merges about once between them
 * instead of once each.
 *
 * Layout: a table of slots, a power of two of 64-bit words, each 0 (free) or (entry offset / 8 + 1)
 * << 16 | the top 16 bits of the piece's hash (most probes of other pieces are told apart without
 * reading the entry); `arena`, the entries, each at an 8-byte boundary: uint32 key length, uint32
 * id count, the key's bytes, then the ids at the next 4-byte boundary.  An adder takes arena room
 * with one atomic add, writes the entry, then claims a free slot with a compare-and-swap (release);
 * a finder loads the table and its slots with acquire, so an entry is complete before anyone can
 * see its slot.  Entries are never moved or removed while threads use the cache; the arena stops
 * taking them when it is used up, the table at max_entries.
 *
 * Growth: the table starts at first_slots and is grown at half full.  The adder that finds it half
 * full builds one twice the size (one thread at a time, under `grow`, taken with trylock; the
 * others go on with the old one meanwhile, up to three quarters full), copies the slots into it
 * and publishes it.  A piece added to the old table during the copy may be missed: it is then
 * computed again and added once more, which costs time, never a wrong id.  Old tables stay mapped until the cache is freed, since a finder may
 * still be reading one (all of them together are smaller than the last).
 *
 * Memory: why it grows rather than starting at its largest, and why tables are huge pages.  Slots
 * are written at random places, so every page of a table is touched; with 4 KiB pages each costs
 * one or two faults (a read maps the zero page, the first write copies it), and on the virtual
 * machines this was measured on a fault of fresh memory costs about 20 us (docs/benchmarks.md,
 * "Tokenizing: how shardrun prepare scales with cores").  A table sized for a million pieces (16
 * MiB) took 8,000 faults, a tenth of the tokenizing threads' time, where 64 MB of English text has
 * 172,000 pieces (a 4 MiB table).  Tables and arena are anonymous mappings aligned to 2 MiB and
 * marked for transparent huge pages; where the kernel has none (transparent_hugepage=never) the
 * same mappings work with small pages.
 *
 * Lifecycle: tf__shared_cache_new (tf_tokenizer_clone, once per base) -> find / add from any thread
 * -> tf__shared_cache_free (with the base, after every clone).
 */
#define _DEFAULT_SOURCE /* madvise, MAP_ANONYMOUS */
#include "tokenizer_impl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define AVG_ENTRY_BYTES 32 /* arena room per entry: GPT-2 pieces are a few bytes and one or two ids */
#define HUGE_PAGE ((size_t)2 << 20)

typedef struct table {
    _Atomic uint64_t *slots;
    size_t cap;                          /* a power of two */
    size_t bytes;                        /* of the mapping at slots */
    struct table *older;                 /* the table this one replaced (kept mapped: see Growth) */
    _Alignas(64) _Atomic size_t entries; /* written by every add: not on the finders' line */
} table;

struct tf__shared_cache {
    _Atomic(table *) cur;
    size_t max_entries, max_key, max_cap;
    unsigned char *arena;
    size_t arena_cap, arena_bytes;
    pthread_mutex_t grow;
    int grow_failed;                  /* out of memory once: the table stays as it is (under grow) */
    _Alignas(64) _Atomic size_t used; /* written by every add: not on the finders' line */
};

typedef struct {
    uint32_t len, count;
} entry_head;

static size_t ids_at(size_t key_len) { return (sizeof(entry_head) + key_len + 3) & ~(size_t)3; }

static size_t huge_round(size_t n) { return (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1); }

/* bytes (a multiple of HUGE_PAGE) of zeroed memory at a HUGE_PAGE boundary, or NULL */
static void *map_huge(size_t bytes) {
    unsigned char *m = mmap(NULL, bytes + HUGE_PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    size_t head = (HUGE_PAGE - (uintptr_t)m % HUGE_PAGE) % HUGE_PAGE;
    if (head) munmap(m, head); /* the unaligned ends back: only the aligned part stays mapped */
    munmap(m + head + bytes, HUGE_PAGE - head);
#ifdef MADV_HUGEPAGE
    madvise(m + head, bytes, MADV_HUGEPAGE); /* a hint: where it is refused, small pages */
#endif
    return m + head;
}

static void table_free(table *t) {
    if (!t) return;
    munmap((void *)t->slots, t->bytes);
    free(t);
}

static table *table_new(size_t cap) {
    table *t = aligned_alloc(64, (sizeof *t + 63) & ~(size_t)63);
    if (!t) return NULL;
    memset(t, 0, sizeof *t);
    t->cap = cap;
    t->bytes = huge_round(cap * sizeof *t->slots);
    if (!(t->slots = map_huge(t->bytes))) {
        free(t);
        return NULL;
    }
    atomic_init(&t->entries, 0);
    return t;
}

tf__shared_cache *tf__shared_cache_new(size_t first_slots, size_t max_entries, size_t max_key) {
    tf__shared_cache *c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
    if (!c) return NULL;
    memset(c, 0, sizeof *c);
    c->max_cap = 1024;
    while (c->max_cap < 2 * max_entries) c->max_cap *= 2;
    c->max_entries = max_entries;
    c->max_key = max_key;
    c->arena_cap = max_entries * AVG_ENTRY_BYTES;
    c->arena_bytes = huge_round(c->arena_cap); /* fresh zero pages: only what is filled becomes resident */
    size_t first = 1024;
    while (first < first_slots && first < c->max_cap) first *= 2;
    table *t = table_new(first);
    if (!t || !(c->arena = map_huge(c->arena_bytes))) {
        table_free(t);
        free(c);
        return NULL;
    }
    atomic_init(&c->cur, t);
    atomic_init(&c->used, 0);
    pthread_mutex_init(&c->grow, NULL);
    return c;
}

void tf__shared_cache_free(tf__shared_cache *c) {
    if (!c) return;
    for (table *t = atomic_load(&c->cur), *o; t; t = o) {
        o = t->older;
        table_free(t);
    }
    munmap(c->arena, c->arena_bytes);
    pthread_mutex_destroy(&c->grow);
    free(c);
}

static const entry_head *entry_at(const tf__shared_cache *c, uint64_t v) {
    return (const entry_head *)(const void *)(c->arena + ((v >> 16) - 1) * 8);
}

/* whether slot value v (non-zero) holds piece k[0 .. n) */
static const entry_head *entry_of(const tf__shared_cache *c, uint64_t v, uint64_t tag, const char *k, size_t n) {
    if ((v & 0xFFFF) != tag) return NULL;
    const entry_head *e = entry_at(c, v);
    return e->len == n && !memcmp(e + 1, k, n) ? e : NULL;
}

const int32_t *tf__shared_cache_find(const tf__shared_cache *c, const char *k, size_t n, uint32_t *count) {
    const table *t = atomic_load_explicit(&c->cur, memory_order_acquire);
    uint64_t h = tf__hash_bytes(k, n), tag = h >> 48;
    for (size_t i = (size_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        uint64_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (!v) return NULL;
        const entry_head *e = entry_of(c, v, tag, k, n);
        if (e) {
            *count = e->count;
            return (const int32_t *)(const void *)((const unsigned char *)e + ids_at(n));
        }
    }
}

/* Replaces full table t by one twice its size (see Growth), unless another thread is doing it or
   has done it. */
static void grow(tf__shared_cache *c, table *t) {
    if (pthread_mutex_trylock(&c->grow)) return;
    table *n = NULL;
    if (atomic_load_explicit(&c->cur, memory_order_relaxed) == t && !c->grow_failed && !(n = table_new(t->cap * 2)))
        c->grow_failed = 1;
    if (n) {
        size_t copied = 0;
        for (size_t i = 0; i < t->cap; i++) {
            uint64_t v = atomic_load_explicit(&t->slots[i], memory_order_acquire);
            if (!v) continue;
            const entry_head *e = entry_at(c, v);
            size_t j = (size_t)tf__hash_bytes((const char *)(e + 1), e->len) & (n->cap - 1);
            while (atomic_load_explicit(&n->slots[j], memory_order_relaxed)) j = (j + 1) & (n->cap - 1);
            atomic_store_explicit(&n->slots[j], v, memory_order_relaxed);
            copied++;
        }
        atomic_init(&n->entries, copied);
        n->older = t;
        atomic_store_explicit(&c->cur, n, memory_order_release);
    }
    pthread_mutex_unlock(&c->grow);
}

void tf__shared_cache_add(tf__shared_cache *c, const char *k, size_t n, const int32_t *ids, uint32_t count) {
    if (n > c->max_key) return;
    table *t = atomic_load_explicit(&c->cur, memory_order_acquire);
    size_t entries = atomic_load_explicit(&t->entries, memory_order_relaxed);
    if (entries >= c->max_entries) return;
    if (entries >= t->cap / 2 && t->cap < c->max_cap) {
        grow(c, t); /* this thread's, or nothing while another thread grows it */
        t = atomic_load_explicit(&c->cur, memory_order_acquire);
        entries = atomic_load_explicit(&t->entries, memory_order_relaxed);
    }
    /* Another thread is growing it (or was stopped while it did: the lock holder may lose its
       core): the others go on adding up to three quarters full rather than wait, then drop pieces
       until the new table is there. */
    if (entries >= t->cap / 4 * 3) return;
    size_t bytes = (ids_at(n) + (size_t)count * sizeof *ids + 7) & ~(size_t)7;
    size_t off = atomic_fetch_add_explicit(&c->used, bytes, memory_order_relaxed);
    if (off + bytes > c->arena_cap) return; /* full (used stays past the end: every later add stops here) */
    unsigned char *p = c->arena + off;
    entry_head head = {(uint32_t)n, count};
    memcpy(p, &head, sizeof head);
    memcpy(p + sizeof head, k, n);
    memcpy(p + ids_at(n), ids, (size_t)count * sizeof *ids);
    uint64_t h = tf__hash_bytes(k, n), tag = h >> 48, v = (uint64_t)(off / 8 + 1) << 16 | tag;
    for (size_t i = (size_t)h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        uint64_t cur = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        if (!cur && atomic_compare_exchange_strong_explicit(&t->slots[i], &cur, v, memory_order_release,
                                                            memory_order_acquire)) {
            atomic_fetch_add_explicit(&t->entries, 1, memory_order_relaxed);
            return;
        }
        if (entry_of(c, cur, tag, k, n)) return; /* another thread added it meanwhile */
    }
}
