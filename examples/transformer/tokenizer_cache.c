/*
 * The cache of encoded pieces a tokenizer shares with its clones (tokenizer_impl.h,
 * tf__shared_cache_*), so that N threads compute each piece's merges about once between them
 * instead of once each.
 *
 * Layout: `slots`, a power of two of 64-bit words, each 0 (free) or (entry offset / 8 + 1) << 16
 * | the top 16 bits of the piece's hash (most probes of other pieces are told apart without
 * reading the entry); `arena`, the entries, each at an 8-byte boundary: uint32 key length, uint32
 * id count, the key's bytes, then the ids at the next 4-byte boundary.  An adder takes arena room
 * with one atomic add, writes the entry, then claims a free slot with a compare-and-swap (release);
 * a finder loads slots with acquire, so an entry is complete before anyone can see its slot.
 * Nothing is ever moved or removed while threads use it; the table stops taking pieces at half
 * full or when the arena is used up.
 *
 * Lifecycle: tf__shared_cache_new (tf_tokenizer_clone, once per base) -> find / add from any thread
 * -> tf__shared_cache_free (with the base, after every clone).
 */
#include "tokenizer_impl.h"
#include "base/hash64.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define AVG_ENTRY_BYTES 32 /* arena room per entry: GPT-2 pieces are a few bytes and one or two ids */

struct tf__shared_cache {
    _Atomic uint64_t *slots;
    size_t cap, max_entries, max_key;
    _Atomic size_t entries;
    unsigned char *arena;
    size_t arena_cap;
    _Atomic size_t used;
};

typedef struct {
    uint32_t len, count;
} entry_head;

static uint64_t hash(const char *s, size_t n) {
    uint64_t h = sr__fnv1a64(SR_FNV1A64_BASIS, s, n);
    return h ^ h >> 29;
}

static size_t ids_at(size_t key_len) { return (sizeof(entry_head) + key_len + 3) & ~(size_t)3; }

tf__shared_cache *tf__shared_cache_new(size_t max_entries, size_t max_key) {
    tf__shared_cache *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = 1024;
    while (c->cap < 2 * max_entries) c->cap *= 2;
    c->max_entries = max_entries;
    c->max_key = max_key;
    c->arena_cap = max_entries * AVG_ENTRY_BYTES;
    /* large callocs are fresh zero pages from the kernel: only what is filled becomes resident */
    c->slots = calloc(c->cap, sizeof *c->slots);
    c->arena = malloc(c->arena_cap);
    if (!c->slots || !c->arena) {
        tf__shared_cache_free(c);
        return NULL;
    }
    atomic_init(&c->entries, 0);
    atomic_init(&c->used, 0);
    return c;
}

void tf__shared_cache_free(tf__shared_cache *c) {
    if (!c) return;
    free((void *)c->slots);
    free(c->arena);
    free(c);
}

/* whether slot value v (non-zero) holds piece k[0 .. n) */
static const entry_head *entry_of(const tf__shared_cache *c, uint64_t v, uint64_t tag, const char *k, size_t n) {
    if ((v & 0xFFFF) != tag) return NULL;
    const entry_head *e = (const entry_head *)(const void *)(c->arena + ((v >> 16) - 1) * 8);
    return e->len == n && !memcmp(e + 1, k, n) ? e : NULL;
}

const int32_t *tf__shared_cache_find(const tf__shared_cache *c, const char *k, size_t n, uint32_t *count) {
    uint64_t h = hash(k, n), tag = h >> 48;
    for (size_t i = (size_t)h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        uint64_t v = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (!v) return NULL;
        const entry_head *e = entry_of(c, v, tag, k, n);
        if (e) {
            *count = e->count;
            return (const int32_t *)(const void *)((const unsigned char *)e + ids_at(n));
        }
    }
}

void tf__shared_cache_add(tf__shared_cache *c, const char *k, size_t n, const int32_t *ids, uint32_t count) {
    if (n > c->max_key || atomic_load_explicit(&c->entries, memory_order_relaxed) >= c->max_entries) return;
    size_t bytes = (ids_at(n) + (size_t)count * sizeof *ids + 7) & ~(size_t)7;
    size_t off = atomic_fetch_add_explicit(&c->used, bytes, memory_order_relaxed);
    if (off + bytes > c->arena_cap) return; /* full (used stays past the end: every later add stops here) */
    unsigned char *p = c->arena + off;
    entry_head head = {(uint32_t)n, count};
    memcpy(p, &head, sizeof head);
    memcpy(p + sizeof head, k, n);
    memcpy(p + ids_at(n), ids, (size_t)count * sizeof *ids);
    uint64_t h = hash(k, n), tag = h >> 48, v = (uint64_t)(off / 8 + 1) << 16 | tag;
    for (size_t i = (size_t)h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
        uint64_t cur = atomic_load_explicit(&c->slots[i], memory_order_acquire);
        if (!cur && atomic_compare_exchange_strong_explicit(&c->slots[i], &cur, v, memory_order_release,
                                                            memory_order_acquire)) {
            atomic_fetch_add_explicit(&c->entries, 1, memory_order_relaxed);
            return;
        }
        if (entry_of(c, cur, tag, k, n)) return; /* another thread added it meanwhile */
    }
}
