/* The world's host table: computed from the ranks' identities, its compact text, and its exchange
   through the store (host_table.h). */
#include "pg/host_table.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "base/hash64.h"
#include "base/strbuf.h"
#include "store/wire.h"

/* ---- the table from the identities ---- */

typedef struct slot {
    uint64_t hash;
    int rank; /* the first rank seen with this identity; -1: empty */
} slot;

int sr__host_table_index(const void *const *ids, const size_t *lens, int n, int *hosts) {
    size_t cap = 16;
    while (cap < 2 * (size_t)n) cap *= 2; /* at most half full: short probe runs */
    slot *table = sr__malloc(cap * sizeof *table);
    if (!table) return -1;
    for (size_t i = 0; i < cap; i++) table[i].rank = -1;
    /* ranks in increasing order: the first one an identity meets is its lowest rank */
    for (int r = 0; r < n; r++) {
        uint64_t h = sr__fnv1a64(SR__FNV1A64_BASIS, ids[r], lens[r]);
        size_t i = (size_t)h & (cap - 1);
        while (table[i].rank >= 0) {
            int q = table[i].rank;
            if (table[i].hash == h && lens[q] == lens[r] && !memcmp(ids[q], ids[r], lens[r])) break;
            i = (i + 1) & (cap - 1);
        }
        if (table[i].rank < 0) table[i] = (slot){h, r};
        hosts[r] = table[i].rank;
    }
    free(table);
    return 0;
}

/* ---- the text ---- */

/* Whether ranks [at, at + len) are all on `host` and rank at + len (if any) is not: a whole block. */
static int block_at(const int *hosts, int n, int at, int len, long long host) {
    if (at + len > n || hosts[at] != host) return 0;
    for (int r = at + 1; r < at + len; r++)
        if (hosts[r] != hosts[at]) return 0;
    return at + len == n || hosts[at + len] != hosts[at];
}

char *sr__host_table_encode(const int *hosts, int n, size_t *len) {
    sr__buf b = {0};
    sr__buf_add(&b, "", 0); /* an empty table is "", not NULL */
    for (int p = 0; p < n;) {
        /* the block at p: the run of ranks on hosts[p]; then as many blocks of the same length as
           follow, on hosts that step evenly from it (each check that fails reads at most one block
           more than the segment holds: O(n) in all) */
        int len0 = 1;
        while (p + len0 < n && hosts[p + len0] == hosts[p]) len0++;
        long long first = hosts[p], step = 0;
        int count = 1, at = p + len0;
        if (at < n && block_at(hosts, n, at, len0, hosts[at])) {
            step = (long long)hosts[at] - first;
            for (count = 2, at += len0; block_at(hosts, n, at, len0, (long long)hosts[at - len0] + step); at += len0)
                count++;
        }
        char seg[96];
        int k;
        if (first == p && (count == 1 || step == len0)) /* each block a new host */
            k = snprintf(seg, sizeof seg, "%s%dx%d", p ? "," : "", count, len0);
        else if (count == 1) k = snprintf(seg, sizeof seg, "%s1x%d@%lld", p ? "," : "", len0, first);
        else k = snprintf(seg, sizeof seg, "%s%dx%d@%lld%+lld", p ? "," : "", count, len0, first, step);
        sr__buf_add(&b, seg, (size_t)k);
        p = at;
    }
    if (b.oom) {
        sr__buf_free(&b);
        return NULL;
    }
    *len = b.n;
    return b.s;
}

/* A decimal number at *p (before end), with a sign if `sign`, within [lo, hi]; *p moves past it.
   0, or -1 when there is none or it is out of range. */
static int number(const char **p, const char *end, int sign, long long lo, long long hi, long long *v) {
    const char *s = *p;
    int neg = 0;
    if (sign && s < end && (*s == '+' || *s == '-')) neg = *s++ == '-';
    if (s == end || *s < '0' || *s > '9') return -1;
    long long x = 0;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        if (x > (LLONG_MAX - 9) / 10) return -1;
        x = x * 10 + (*s - '0');
    }
    if (neg) x = -x;
    if (x < lo || x > hi) return -1;
    *v = x;
    *p = s;
    return 0;
}

int sr__host_table_decode(const char *text, size_t len, int *hosts, int n, char *err, size_t errlen) {
    const char *p = text, *end = text + len;
    int at = 0;
    while (at < n) {
        long long count, blen, host, step = 0;
        size_t off = (size_t)(p - text);
        if (at && (p == end || *p++ != ',')) return sr__fail(err, errlen, "expected ',' at byte %zu", off);
        off = (size_t)(p - text);
        if (number(&p, end, 0, 1, n - at, &count) || p == end || *p++ != 'x' ||
            number(&p, end, 0, 1, (n - at) / count, &blen))
            return sr__fail(err, errlen, "expected COUNTxLEN covering at most the %d ranks left at byte %zu", n - at,
                            off);
        int own = p == end || *p != '@'; /* each block a host of its own */
        if (!own) {
            p++;
            if (number(&p, end, 1, INT_MIN, INT_MAX, &host) ||
                (p < end && (*p == '+' || *p == '-') && number(&p, end, 1, -(long long)UINT_MAX, UINT_MAX, &step)))
                return sr__fail(err, errlen, "expected @HOST or @HOST+STEP at byte %zu", off);
        }
        long long h = own ? at : host;
        for (long long i = 0; i < count; i++, h = own ? at : h + step) {
            if (h < INT_MIN || h > INT_MAX)
                return sr__fail(err, errlen, "the host of rank %d steps out of range at byte %zu", at, off);
            for (long long k = 0; k < blen; k++) hosts[at++] = (int)h;
        }
    }
    size_t left = (size_t)(end - p);
    if (left) return sr__fail(err, errlen, "%zu byte%s left after the %d ranks", left, left == 1 ? "" : "s", n);
    return 0;
}

/* ---- through the store ---- */

/* What <root>hosts holds instead of the table when the rank making it failed: "failed <rank>: <why>". */
#define FAILED "failed "

/* Every rank's identity into ids/lens (host_table.h, sr__host_table_publish).  0, or -1 with why. */
static int fetch_ids(sr__store *store, const char *root, int size, void **ids, size_t *lens, char *why, size_t whylen) {
    size_t klen = strlen(root) + sizeof "host/" + 12;
    char *names = sr__malloc((size_t)size * klen);
    const char **keys = sr__calloc((size_t)size, sizeof *keys);
    if (!names || !keys) {
        free(names), free((void *)keys);
        snprintf(why, whylen, "out of memory for the keys of %d ranks' host identities (%zu bytes)", size,
                 (size_t)size * (klen + sizeof *keys));
        return -1;
    }
    for (int r = 0; r < size; r++) {
        snprintf(names + (size_t)r * klen, klen, "%shost/%d", root, r);
        keys[r] = names + (size_t)r * klen;
    }
    /* what one request carries: its items (2 besides the keys) and its bytes */
    size_t fit = (SR__STORE_MAX_MESSAGE - 64) / (4 + klen);
    int chunk = size, rc = 0;
    if ((size_t)chunk > SR__STORE_MAX_ITEMS - 2) chunk = (int)(SR__STORE_MAX_ITEMS - 2);
    if ((size_t)chunk > fit) chunk = (int)fit;
    for (int at = 0; at < size && rc == 0;) {
        int k = size - at < chunk ? size - at : chunk;
        char missing[256] = "";
        /* each rank set its identity before it counted itself in: all are there, no waiting */
        int got = sr__store_fetch(store, keys + at, k, 0, ids + at, lens + at, missing, sizeof missing);
        if (got == 0) at += k;
        else if (got == 1)
            rc = -1, snprintf(why, whylen, "the store lost host identities of ranks counted in (%.200s)", missing);
        else if (k > 1) chunk = k / 2; /* their values exceed a message, or the store failed: it fails again */
        else rc = -1, snprintf(why, whylen, "store error: %s", sr__store_error(store));
    }
    free(names);
    free((void *)keys);
    return rc;
}

int sr__host_table_publish(sr__store *store, const char *root, int rank, int size) {
    void **ids = sr__calloc((size_t)size, sizeof *ids);
    size_t *lens = sr__calloc((size_t)size, sizeof *lens), tlen = 0;
    int *hosts = sr__malloc((size_t)size * sizeof *hosts);
    char *table = NULL, why[700] = "", key[300];
    snprintf(key, sizeof key, "%shosts", root);
    if (!ids || !lens || !hosts)
        snprintf(why, sizeof why, "out of memory for the host identities of %d ranks (%zu bytes)", size,
                 (size_t)size * (sizeof *ids + sizeof *lens + sizeof *hosts));
    else if (fetch_ids(store, root, size, ids, lens, why, sizeof why) != 0) {
        /* why says it */
    } else if (sr__host_table_index((const void *const *)ids, lens, size, hosts) != 0)
        snprintf(why, sizeof why, "out of memory for the hash table of %d host identities", size);
    else if (!(table = sr__host_table_encode(hosts, size, &tlen)))
        snprintf(why, sizeof why, "out of memory for the host table of %d ranks", size);
    else if (tlen > SR__STORE_MAX_VALUE)
        snprintf(why, sizeof why,
                 "the host table of %d ranks takes %zu bytes, more than a store value holds (%u): the ranks "
                 "of each host are scattered in no pattern it can shorten; start each host's ranks consecutively",
                 size, tlen, SR__STORE_MAX_VALUE);
    int rc;
    if (why[0]) {
        char note[sizeof why + 32];
        int k = snprintf(note, sizeof note, FAILED "%d: %s", rank, why);
        rc = sr__store_set(store, key, note, (size_t)k < sizeof note ? (size_t)k : sizeof note - 1);
    } else {
        rc = sr__store_set(store, key, table, tlen);
    }
    for (int r = 0; r < size && ids; r++) free(ids[r]);
    free(ids);
    free(lens);
    free(hosts);
    free(table);
    return rc;
}

/* Whether a decoded table breaks what a world's table is: each host named by its lowest rank
   (hosts[r] <= r, and that rank names itself); why says where. */
static int not_a_world(const int *hosts, int size, char *why, size_t whylen) {
    for (int r = 0; r < size; r++) {
        if (hosts[r] >= 0 && hosts[r] <= r && hosts[hosts[r]] == hosts[r]) continue;
        snprintf(why, whylen, "rank %d's host is %d, not a rank at or before it that names itself", r, hosts[r]);
        return 1;
    }
    return 0;
}

int sr__host_table_read(sr__store *store, const char *root, int size, int *hosts, char *why, size_t whylen) {
    char key[300], what[300];
    snprintf(key, sizeof key, "%shosts", root);
    void *text = NULL;
    size_t len = 0;
    int got = sr__store_get(store, key, &text, &len), rc = -1;
    if (got < 0) snprintf(why, whylen, "store error: %s", sr__store_error(store));
    else if (got == 1) snprintf(why, whylen, "the store lost the host table %s", key);
    else if (!strncmp(text, FAILED, strlen(FAILED)))
        snprintf(why, whylen, "the host table of %d ranks was not made: rank %s", size,
                 (const char *)text + strlen(FAILED));
    else if (sr__host_table_decode(text, len, hosts, size, what, sizeof what) != 0 ||
             not_a_world(hosts, size, what, sizeof what))
        snprintf(why, whylen, "the host table %s of %d ranks does not read: %s", key, size, what);
    else rc = 0;
    free(text);
    return rc;
}
