/* The world's host table (pg/host_table.h): the layouts shardrun makes encode in a few bytes
   whatever the world's size; any array of ints, random ones up to 20,000 ranks included, decodes
   to exactly what was encoded; a text that is cut, runs over the world or steps out of range is
   refused with what is wrong; and the index from the identities is the lowest rank with the same
   identity, as a comparison of every pair computes it.  Through a real store server: the table
   published from the ranks' identities and read back; identities that exceed one message (which
   one FETCH cannot carry) read in parts; a lost identity, the publishing rank's failure and a
   table that is no world's make every reader fail with the reason. */
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store_fixture.h"
#include "pg/host_table.h"

enum { MAXN = 20000 };
static int hosts[MAXN], back[MAXN];

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next_u32(void) { /* xorshift64*: the same arrays on every run */
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (uint32_t)((rng * 0x2545f4914f6cdd1dull) >> 32);
}
static int below(int n) { return (int)(next_u32() % (uint32_t)n); }

/* Encodes hosts[0 .. n), decodes it back, and checks the two are the same; the text's length, or
   0 when it failed. */
static size_t round_trip(int n, const char *what) {
    size_t len = 0;
    char *text = sr__host_table_encode(hosts, n, &len), err[256] = "";
    CHECK(text != NULL);
    if (!text) return 0;
    CHECK(strlen(text) == len);
    memset(back, 0x5a, sizeof back);
    int rc = sr__host_table_decode(text, len, back, n, err, sizeof err);
    int same = rc == 0 && !memcmp(hosts, back, (size_t)n * sizeof *hosts);
    CHECK(same);
    if (!same) fprintf(stderr, "  %s (%d ranks): %s; text %.200s\n", what, n, rc ? err : "decoded otherwise", text);
    free(text);
    return same ? len : 0;
}

/* The text of hosts[0 .. n), for exact comparisons. */
static char *text_of(int n) {
    size_t len;
    return sr__host_table_encode(hosts, n, &len);
}

/* Node-major: nodes of `per` ranks each (the last one may be shorter), each host named by its
   first rank. */
static void node_major(int n, int per) {
    for (int r = 0; r < n; r++) hosts[r] = r - r % per;
}

static void typical_layouts(void) {
    static const struct {
        int n, per;
        const char *want;
    } cases[] = {
        {4096, 1, "4096x1"},  {20000, 1, "20000x1"}, {4096, 4096, "1x4096"}, {4096, 8, "512x8"},
        {20000, 8, "2500x8"}, {1, 1, "1x1"},         {10, 4, "2x4,1x2"},     {4096, 3, "1365x3,1x1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        node_major(cases[i].n, cases[i].per);
        char *t = text_of(cases[i].n);
        CHECK_STR(t, cases[i].want);
        size_t len = round_trip(cases[i].n, cases[i].want);
        CHECK(len > 0 && len <= 12); /* a few bytes, whatever the size */
        printf("  %d ranks, %d a host: \"%s\" (%zu bytes)\n", cases[i].n, cases[i].per, t ? t : "(null)", len);
        free(t);
    }
}

/* The header's examples, and layouts a launcher may make: exact texts. */
static void other_layouts(void) {
    static const struct {
        int n;
        int h[12];
        const char *want;
    } cases[] = {
        {6, {0, 0, 2, 2, 2, 5}, "1x2,1x3,1x1"},
        {8, {0, 1, 2, 3, 0, 1, 2, 3}, "4x1,4x1@0+1"},
        {12, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3}, "4x1,4x1@0+1,4x1@0+1"},
        {6, {0, 0, 2, 2, 0, 0}, "2x2,1x2@0"},
        {8, {0, 0, 2, 2, 2, 2, 0, 0}, "1x2,1x4,1x2@0"},
        {6, {0, 1, 2, 2, 1, 0}, "2x1,1x2,2x1@1-1"},
        {4, {3, 3, 3, 3}, "1x4@3"},
        {3, {-1, INT_MIN, INT_MAX}, "2x1@-1-2147483647,1x1@2147483647"},
        {0, {0}, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(hosts, cases[i].h, sizeof cases[i].h);
        char *t = text_of(cases[i].n);
        CHECK_STR(t, cases[i].want);
        round_trip(cases[i].n, cases[i].want);
        free(t);
    }
    /* round robin over 512 hosts, 8 rounds: one segment a round */
    for (int r = 0; r < 4096; r++) hosts[r] = r % 512;
    size_t len = round_trip(4096, "round robin");
    CHECK(len > 0 && len < 120);
    printf("  4096 ranks dealt round robin over 512 hosts: %zu bytes\n", len);
}

/* Random arrays of every kind, up to MAXN ranks: each decodes to itself. */
static void random_arrays(void) {
    int trials = 0, failed_before = check_failures;
    for (int t = 0; t < 240 && check_failures == failed_before; t++, trials++) {
        int n = t % 4 == 0 ? MAXN - below(50) : 1 + below(t % 2 ? 300 : MAXN);
        switch (t % 6) {
        case 0: /* any ints */
            for (int r = 0; r < n; r++) hosts[r] = (int)next_u32();
            break;
        case 1: /* ranks of few hosts, in any order, named by the lowest rank: a world's table */
        case 2: {
            int nh = 1 + below(t % 6 == 1 ? 8 : 400);
            int first[400];
            for (int h = 0; h < nh; h++) first[h] = -1;
            for (int r = 0; r < n; r++) {
                int h = below(nh);
                if (first[h] < 0) first[h] = r;
                hosts[r] = first[h];
            }
            break;
        }
        case 3: /* nodes of uneven sizes, consecutive, some hosts coming back later */
            for (int r = 0; r < n;) {
                int len = 1 + below(16), h = r && below(5) == 0 ? hosts[below(r)] : r;
                for (int k = 0; k < len && r < n; k++) hosts[r++] = h;
            }
            break;
        case 4: /* runs of a few values, with steps up and down */
            for (int r = 0; r < n; r++)
                hosts[r] = r && below(3) ? hosts[r - 1] + (below(2) ? 1 : -1) * below(3) : below(9);
            break;
        default: /* a uniform node-major world with one odd rank */
            node_major(n, 1 + below(64));
            hosts[below(n)] = below(n);
            break;
        }
        round_trip(n, "random");
    }
    printf("  %d random arrays of up to %d ranks round-trip\n", trials, MAXN);
}

static void refuses(const char *text, int n, const char *want) {
    char err[256] = "";
    int rc = sr__host_table_decode(text, strlen(text), back, n, err, sizeof err);
    check_rejected(rc == 0, err, "", want, text, __FILE__, __LINE__, 0);
}

static void malformed(void) {
    refuses("", 4, "expected COUNTxLEN");
    refuses("3x1", 4, "expected ','");
    refuses("5x1", 4, "covering at most the 4 ranks left");
    refuses("2x3", 4, "covering at most the 4 ranks left");
    refuses("4x1,", 4, "1 byte left after the 4 ranks");
    refuses("4x1 ,1x1", 4, "5 bytes left after the 4 ranks");
    refuses("0x4", 4, "expected COUNTxLEN");
    refuses("1x0,1x4", 4, "expected COUNTxLEN");
    refuses("4y1", 4, "expected COUNTxLEN");
    refuses("1x4@", 4, "expected @HOST");
    refuses("1x4@x", 4, "expected @HOST");
    refuses("2x2@1+", 4, "expected @HOST or @HOST+STEP");
    refuses("1x4@2147483648", 4, "expected @HOST");
    refuses("4x1@2147483646+1", 4, "steps out of range");
    refuses("4x1@-2147483647-1", 4, "steps out of range");
    refuses("99999999999999999999x1", 4, "expected COUNTxLEN");
    refuses("failed 3: out of memory", 4, "expected COUNTxLEN");
}

/* The index against every pair compared: identities of a few lengths sharing prefixes. */
static void index_of_identities(void) {
    enum { N = 3000 };
    static char buf[N][48];
    static const void *ids[N];
    static size_t lens[N];
    for (int r = 0; r < N; r++) {
        int h = below(r % 3 ? 700 : 5);
        lens[r] = (size_t)snprintf(buf[r], sizeof buf[r], "host%d|boot-0123%s", h, h % 2 ? "4567" : "");
        if (h % 7 == 0) lens[r]--; /* the same bytes, one shorter: another identity */
        ids[r] = buf[r];
    }
    CHECK(sr__host_table_index(ids, lens, N, hosts) == 0);
    int wrong = 0;
    for (int r = 0; r < N; r++) {
        int lowest = r;
        for (int q = 0; q < r && lowest == r; q++)
            if (lens[q] == lens[r] && !memcmp(ids[q], ids[r], lens[r])) lowest = q;
        wrong += hosts[r] != lowest;
    }
    CHECK(wrong == 0);
    round_trip(N, "index");
    /* every rank its own host, and all on one */
    for (int r = 0; r < N; r++) lens[r] = (size_t)snprintf(buf[r], sizeof buf[r], "simhost%d-boot", r);
    CHECK(sr__host_table_index(ids, lens, N, hosts) == 0);
    char *t = text_of(N);
    CHECK_STR(t, "3000x1");
    free(t);
    for (int r = 0; r < N; r++) lens[r] = (size_t)snprintf(buf[r], sizeof buf[r], "one|host");
    CHECK(sr__host_table_index(ids, lens, N, hosts) == 0);
    t = text_of(N);
    CHECK_STR(t, "1x3000");
    free(t);
    CHECK(sr__host_table_index(ids, lens, 0, hosts) == 0);
}

/* read's failure on `root`, which must contain `want` */
static void read_fails(sr__store *c, const char *root, int n, const char *want) {
    char why[1024] = "";
    int rc = sr__host_table_read(c, root, n, back, why, sizeof why);
    check_rejected(rc == 0, why, "", want, root, __FILE__, __LINE__, 0);
}

/* 2,000 ranks on 250 nodes of 8, with identities like sr__shm_host_id's: one short table */
static void published_and_read(sr__store *c) {
    enum { N = 2000 };
    char key[64], why[1024] = "";
    for (int r = 0; r < N; r++) {
        char id[128];
        snprintf(key, sizeof key, "pg/host/%d", r);
        int k = snprintf(id, sizeof id, "node%03d|0b5c2d4e-9f1a-4c3e-8a7b-6d5e4f3a2b1c|ipc:[4026531839]|mnt:[%d]|",
                         r / 8, 40265318 - r / 8);
        CHECK(sr__store_set(c, key, id, (size_t)k) == 0);
    }
    void *text = NULL;
    size_t len = 0;
    CHECK(sr__host_table_publish(c, "pg/", 1234, N) == 0);
    CHECK(sr__store_get(c, "pg/hosts", &text, &len) == 0);
    CHECK_STR(text, "250x8");
    free(text);
    memset(back, 0x5a, sizeof back);
    CHECK(sr__host_table_read(c, "pg/", N, back, why, sizeof why) == 0);
    int wrong = 0;
    for (int r = 0; r < N; r++) wrong += back[r] != r - r % 8;
    CHECK(wrong == 0);
}

/* 5 identities of 1,000,000 bytes (two hosts: ranks 0, 2, 4 and 1, 3): more than one message
   holds, so that one FETCH of them is refused; the publisher reads them in parts */
static void over_one_message(sr__store *c) {
    enum { BIG = 1000000 };
    char *big = malloc(BIG), why[1024] = "";
    const char *keys[5] = {"big/host/0", "big/host/1", "big/host/2", "big/host/3", "big/host/4"};
    CHECK(big != NULL);
    if (!big) return;
    for (int r = 0; r < 5; r++) {
        memset(big, 'a' + r % 2, BIG);
        CHECK(sr__store_set(c, keys[r], big, BIG) == 0);
    }
    free(big);
    void *vals[5] = {0};
    size_t lens[5];
    char missing[64];
    CHECK(sr__store_fetch(c, keys, 5, 0, vals, lens, missing, sizeof missing) == -1);
    CHECK(sr__host_table_publish(c, "big/", 4, 5) == 0);
    CHECK(sr__host_table_read(c, "big/", 5, back, why, sizeof why) == 0);
    CHECK(back[0] == 0 && back[1] == 1 && back[2] == 0 && back[3] == 1 && back[4] == 0);
    printf("  5 identities of %d bytes (over one message) read in parts: hosts %d %d %d %d %d\n", BIG, back[0], back[1],
           back[2], back[3], back[4]);
}

/* the reasons every reader fails with */
static void failures(sr__store *c) {
    /* rank 2's identity is gone: the publisher (rank 2 here) says so in the table's place */
    CHECK(sr__store_set(c, "lost/host/0", "a", 1) == 0 && sr__store_set(c, "lost/host/1", "b", 1) == 0);
    CHECK(sr__host_table_publish(c, "lost/", 2, 3) == 0);
    read_fails(c, "lost/", 3, "the host table of 3 ranks was not made: rank 2: the store lost host identities");
    read_fails(c, "lost/", 3, "(lost/host/2)");
    /* what a publisher out of memory leaves */
    const char *note = "failed 7: out of memory for the hash table of 8 host identities";
    CHECK(sr__store_set(c, "oom/hosts", note, strlen(note)) == 0);
    read_fails(c, "oom/", 8, "was not made: rank 7: out of memory for the hash table of 8 host identities");
    /* tables that are no world's, and none */
    CHECK(sr__store_set(c, "odd/hosts", "1x4@3", 5) == 0);
    read_fails(c, "odd/", 4, "does not read: rank 0's host is 3");
    CHECK(sr__store_set(c, "cut/hosts", "3x1", 3) == 0);
    read_fails(c, "cut/", 4, "does not read: expected ','");
    read_fails(c, "none/", 4, "the store lost the host table none/hosts");
}

static void through_the_store(void) {
    char err[512];
    int port = fixture_server_start();
    CHECK(port > 0);
    if (port <= 0) return;
    sr__store *c = sr__store_connect("127.0.0.1", port, "secret", 5, err, sizeof err);
    CHECK(c != NULL);
    if (c) {
        published_and_read(c);
        over_one_message(c);
        failures(c);
        sr__store_close(c);
    }
    fixture_server_stop();
}

int main(void) {
    typical_layouts();
    other_layouts();
    random_arrays();
    malformed();
    index_of_identities();
    through_the_store();
    return CHECK_DONE();
}
