/*
 * The etcd client (core/etcd/etcd.h) against a real three-member etcd cluster, which
 * tests/etcd/cluster.sh starts on loopback and passes in:
 *
 *     etcd_client_test HOST:PORT,HOST:PORT,HOST:PORT PID,PID,PID
 *
 * (the members' client addresses, and their pids in the same order: the failover check kills the
 * member the client talks to).  In order: endpoint lists that cannot work (malformed; no member
 * answering) fail within the timeout, naming each member; keys; compare-and-swap with two racing
 * creators; leases (expiry removes keys, keepalive keeps them, revoke); a watch's events in order;
 * then the client's member killed, and every operation and the watch go on on the others; a
 * watch from a compacted revision says so.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../unit/check.h"
#include "etcd/etcd.h"

static char err[2048];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The timeouts the checks judge: short, so that a dead member costs little. */
static const sr__etcd_opts opts = {
    .connect_timeout_ms = 300, .attempt_timeout_ms = 1000, .op_timeout_ms = 6000, .watch_probe_ms = 2000};

static sr__etcd *open_or_die(const char *endpoints, const sr__etcd_opts *o) {
    sr__etcd *c = sr__etcd_open(endpoints, o, err, sizeof err);
    if (!c) {
        fprintf(stderr, "FAIL: cannot open a client on %s: %s\n", endpoints, err);
        exit(1);
    }
    return c;
}

/* The value of key, or NULL when absent (a static buffer). */
static const char *value_of(sr__etcd *c, const char *key) {
    static char v[256];
    sr__etcd_kvs r;
    if (sr__etcd_get(c, key, &r, err, sizeof err) != 0) {
        fprintf(stderr, "get %s: %s\n", key, err);
        return "(error)";
    }
    const char *out = NULL;
    if (r.n == 1) snprintf(v, sizeof v, "%s", r.kv[0].value), out = v;
    sr__etcd_kvs_free(&r);
    return out;
}

/* ---- endpoint lists that cannot work ---------------------------------------------------------- */

/* A port on 127.0.0.1 that refuses (bound, not listening: a connection is reset) or one that
   never answers (listening, never accepting: the connection completes in the backlog, and no answer
   comes).  Both stay bound until *fd is closed, so the two differ. */
static int loopback_port(int listening, int *fd_out) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0 ||
        (listening && listen(fd, 16) != 0)) {
        perror("FAIL: harness: a loopback socket");
        exit(1);
    }
    *fd_out = fd;
    return ntohs(a.sin_port);
}

static void check_unreachable(void) {
    printf("== endpoint lists that cannot work\n");
    const char *bad[] = {"",
                         "127.0.0.1",
                         "127.0.0.1:x",
                         "127.0.0.1:2379,,127.0.0.2:2379",
                         "https://127.0.0.1:2379",
                         "127.0.0.1:99999",
                         "host/path:2379"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sr__etcd *c = sr__etcd_open(bad[i], &opts, err, sizeof err);
        check_rejected(c != NULL, err, "etcd endpoint list", bad[i][0] == 'h' && bad[i][4] == 's' ? "TLS" : "entry",
                       bad[i], __FILE__, __LINE__, 0);
        sr__etcd_close(c);
    }

    int refused_fd = -1, silent_fd = -1;
    int refused = loopback_port(0, &refused_fd), silent = loopback_port(1, &silent_fd);
    char list[128];
    snprintf(list, sizeof list, "127.0.0.1:%d,127.0.0.1:%d", refused, silent);
    sr__etcd_opts quick = {.connect_timeout_ms = 300, .attempt_timeout_ms = 500, .op_timeout_ms = 1500};
    sr__etcd *c = open_or_die(list, &quick);
    double t0 = now_s();
    int rc = sr__etcd_put(c, "k", "v", 1, 0, NULL, err, sizeof err);
    double took = now_s() - t0;
    check_rejected(rc == 0, err, "etcd put \"k\"", "no member answered within 1500 ms", "a put to no member", __FILE__,
                   __LINE__, 0);
    char want[64];
    snprintf(want, sizeof want, "http://127.0.0.1:%d: Couldn't connect", refused);
    CHECK(strstr(err, want) != NULL);
    snprintf(want, sizeof want, "http://127.0.0.1:%d: no answer within", silent);
    CHECK(strstr(err, want) != NULL);
    printf("  put failed after %.2f s (op_timeout 1.5 s)\n", took);
    CHECK(took >= 1.4 && took < 2.5);

    t0 = now_s();
    sr__etcd_watch *w = sr__etcd_watch_open(c, "k/", 0, err, sizeof err);
    took = now_s() - t0;
    check_rejected(w != NULL, err, "etcd watch of the prefix \"k/\"", "no member served it within 1500 ms",
                   "a watch on no member", __FILE__, __LINE__, 0);
    printf("  watch failed after %.2f s\n", took);
    CHECK(took >= 1.4 && took < 2.5);
    sr__etcd_watch_close(w);
    sr__etcd_close(c);
    close(refused_fd);
    close(silent_fd);
}

/* ---- the cluster is up ------------------------------------------------------------------------ */

/* Every member answers a read on its own (within 20 s of the members' start). */
static int wait_ready(const char *endpoints) {
    char list[512];
    snprintf(list, sizeof list, "%s", endpoints);
    double deadline = now_s() + 20;
    for (char *save = NULL, *e = strtok_r(list, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
        sr__etcd_opts one = {.connect_timeout_ms = 300, .attempt_timeout_ms = 1000, .op_timeout_ms = 1000};
        sr__etcd *c = open_or_die(e, &one);
        sr__etcd_kvs r;
        int ok = 0;
        while (!ok && now_s() < deadline) {
            ok = sr__etcd_range(c, "ready/", &r, err, sizeof err) == 0;
            if (ok) sr__etcd_kvs_free(&r);
            else sleep_ms(100);
        }
        sr__etcd_close(c);
        if (!ok) {
            fprintf(stderr, "FAIL: harness: the member at %s never answered: %s\n", e, err);
            return -1;
        }
    }
    return 0;
}

/* ---- keys --------------------------------------------------------------------------------------- */

static void check_keys(sr__etcd *c) {
    printf("== keys\n");
    int64_t rev1 = 0, rev2 = 0, deleted = -1;
    CHECK(sr__etcd_put(c, "kv/a", "1", 1, 0, &rev1, err, sizeof err) == 0);
    const char bin[] = {'x', 0, (char)0xff, '\n', '"'};
    CHECK(sr__etcd_put(c, "kv/ab", bin, sizeof bin, 0, &rev2, err, sizeof err) == 0);
    CHECK(sr__etcd_put(c, "kv/b", "2", 1, 0, NULL, err, sizeof err) == 0);
    CHECK(sr__etcd_put(c, "kw", "outside", 7, 0, NULL, err, sizeof err) == 0);
    CHECK(rev1 > 0 && rev2 == rev1 + 1);

    sr__etcd_kvs r;
    CHECK(sr__etcd_get(c, "kv/ab", &r, err, sizeof err) == 0);
    CHECK(r.n == 1 && r.kv[0].value_len == sizeof bin && !memcmp(r.kv[0].value, bin, sizeof bin));
    CHECK(r.n == 1 && r.kv[0].mod_revision == rev2 && r.kv[0].create_revision == rev2 && r.kv[0].version == 1);
    CHECK(r.revision >= rev2 + 2);
    sr__etcd_kvs_free(&r);
    CHECK(sr__etcd_get(c, "kv/none", &r, err, sizeof err) == 0 && r.n == 0);
    sr__etcd_kvs_free(&r);

    /* a prefix: "kv/a" holds kv/a and kv/ab, not kv/b; "kv/" not "kw" */
    CHECK(sr__etcd_range(c, "kv/a", &r, err, sizeof err) == 0);
    CHECK(r.n == 2 && !strcmp(r.kv[0].key, "kv/a") && !strcmp(r.kv[1].key, "kv/ab"));
    sr__etcd_kvs_free(&r);
    CHECK(sr__etcd_range(c, "kv/", &r, err, sizeof err) == 0);
    CHECK(r.n == 3 && !strcmp(r.kv[2].key, "kv/b") && !strcmp(r.kv[2].value, "2"));
    sr__etcd_kvs_free(&r);

    CHECK(sr__etcd_delete(c, "kv/a", 0, &deleted, err, sizeof err) == 0 && deleted == 1);
    CHECK(value_of(c, "kv/a") == NULL);
    CHECK(sr__etcd_delete(c, "kv/", 1, &deleted, err, sizeof err) == 0 && deleted == 2);
    CHECK(sr__etcd_range(c, "kv/", &r, err, sizeof err) == 0 && r.n == 0);
    sr__etcd_kvs_free(&r);
    CHECK(value_of(c, "kw") && !strcmp(value_of(c, "kw"), "outside"));
    printf("  put, get, range of a prefix, delete: done\n");
}

/* ---- compare-and-swap: two creators racing ------------------------------------------------- */

typedef struct racer {
    const char *endpoints;
    pthread_barrier_t *start;
    int id, rounds;
    int won[32];       /* per round: 1 won, 0 lost, -1 error */
    char seen[32][32]; /* per round, when lost: the value found */
} racer;

static void *race(void *arg) {
    racer *r = arg;
    char e[512];
    sr__etcd *c = sr__etcd_open(r->endpoints, &opts, e, sizeof e);
    for (int i = 0; i < r->rounds; i++) {
        char key[32], value[32];
        snprintf(key, sizeof key, "cas/%d", i);
        snprintf(value, sizeof value, "creator-%d", r->id);
        pthread_barrier_wait(r->start);
        sr__etcd_kvs cur;
        r->won[i] = c ? sr__etcd_cas(c, key, 0, value, strlen(value), 0, &cur, NULL, e, sizeof e) : -1;
        if (r->won[i] == 0 && cur.n == 1) snprintf(r->seen[i], sizeof r->seen[i], "%s", cur.kv[0].value);
        if (r->won[i] < 0) fprintf(stderr, "creator %d, round %d: %s\n", r->id, i, e);
        if (r->won[i] >= 0) sr__etcd_kvs_free(&cur);
    }
    sr__etcd_close(c);
    return NULL;
}

static void check_cas(sr__etcd *c, const char *endpoints) {
    printf("== compare-and-swap\n");
    enum { ROUNDS = 20 };
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    racer r[2] = {{endpoints, &start, 0, ROUNDS, {0}, {{0}}}, {endpoints, &start, 1, ROUNDS, {0}, {{0}}}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, race, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    pthread_barrier_destroy(&start);
    int wins[2] = {0, 0}, bad = 0;
    for (int i = 0; i < ROUNDS; i++) {
        int a = r[0].won[i], b = r[1].won[i];
        if (!((a == 1 && b == 0) || (a == 0 && b == 1))) {
            bad++;
            fprintf(stderr, "round %d: creator 0 %d, creator 1 %d (want one 1 and one 0)\n", i, a, b);
            continue;
        }
        int w = a == 1 ? 0 : 1;
        wins[w]++;
        char want[32], key[32];
        snprintf(want, sizeof want, "creator-%d", w);
        snprintf(key, sizeof key, "cas/%d", i);
        CHECK(!strcmp(r[1 - w].seen[i], want)); /* the loser saw the winner's value */
        const char *v = value_of(c, key);
        CHECK(v && !strcmp(v, want));
    }
    CHECK(bad == 0);
    printf("  %d rounds of two racing creators: one won each (creator 0 %d times, creator 1 %d)\n", ROUNDS, wins[0],
           wins[1]);

    /* compare mod_revision: the current one swaps, a stale one does not and shows the key */
    sr__etcd_kvs cur;
    int64_t rev = 0, rev2 = 0;
    CHECK(sr__etcd_cas(c, "cas/mod", 0, "v1", 2, 0, NULL, &rev, err, sizeof err) == 1);
    CHECK(sr__etcd_cas(c, "cas/mod", 0, "again", 5, 0, &cur, NULL, err, sizeof err) == 0);
    CHECK(cur.n == 1 && cur.kv[0].mod_revision == rev && !strcmp(cur.kv[0].value, "v1"));
    sr__etcd_kvs_free(&cur);
    CHECK(sr__etcd_cas(c, "cas/mod", rev, "v2", 2, 0, NULL, &rev2, err, sizeof err) == 1 && rev2 > rev);
    CHECK(sr__etcd_cas(c, "cas/mod", rev, "v3", 2, 0, &cur, NULL, err, sizeof err) == 0);
    CHECK(cur.n == 1 && cur.kv[0].mod_revision == rev2 && !strcmp(cur.kv[0].value, "v2"));
    sr__etcd_kvs_free(&cur);
    CHECK(sr__etcd_cas(c, "cas/none", 5, "x", 1, 0, &cur, NULL, err, sizeof err) == 0 && cur.n == 0);
    sr__etcd_kvs_free(&cur);
    printf("  mod_revision compared: the current one swaps, a stale one shows the key\n");
}

/* ---- leases -------------------------------------------------------------------------------------- */

static void check_leases(sr__etcd *c) {
    printf("== leases\n");
    int64_t short_id = 0, kept_id = 0, ttl = 0, left = 0;
    CHECK(sr__etcd_lease_grant(c, 1, &short_id, &ttl, err, sizeof err) == 0 && short_id != 0 && ttl >= 1);
    printf("  a lease of 1 s granted for %" PRId64 " s\n", ttl);
    CHECK(sr__etcd_lease_grant(c, 1, &kept_id, NULL, err, sizeof err) == 0 && kept_id != short_id);
    CHECK(sr__etcd_put(c, "lease/short", "s", 1, short_id, NULL, err, sizeof err) == 0);
    CHECK(sr__etcd_put(c, "lease/kept", "k", 1, kept_id, NULL, err, sizeof err) == 0);
    sr__etcd_kvs r;
    CHECK(sr__etcd_get(c, "lease/kept", &r, err, sizeof err) == 0 && r.n == 1 && r.kv[0].lease == kept_id);
    sr__etcd_kvs_free(&r);

    /* renewed every 250 ms for 3 s (three TTLs): lease/kept stays; lease/short, never renewed, goes */
    int renewed = 0, failed = 0, gone_at = -1;
    double t0 = now_s();
    while (now_s() - t0 < 3.0) {
        if (sr__etcd_lease_keepalive(c, kept_id, &left, err, sizeof err) == 1 && left >= 1) renewed++;
        else failed++, fprintf(stderr, "keepalive: %s\n", err);
        if (gone_at < 0 && !value_of(c, "lease/short")) gone_at = (int)((now_s() - t0) * 1000);
        sleep_ms(250);
    }
    CHECK(failed == 0 && renewed >= 4); /* fewer than 12 on a busy machine: each call takes its time */
    CHECK(gone_at >= 0);
    printf("  the unrenewed lease's key gone after %d ms; the renewed one's still there (%d renewals)\n", gone_at,
           renewed);
    const char *kept = value_of(c, "lease/kept");
    CHECK(kept && !strcmp(kept, "k"));
    CHECK(sr__etcd_lease_keepalive(c, short_id, &left, err, sizeof err) == 0);

    CHECK(sr__etcd_lease_revoke(c, kept_id, err, sizeof err) == 0);
    CHECK(value_of(c, "lease/kept") == NULL);
    CHECK(sr__etcd_lease_keepalive(c, kept_id, NULL, err, sizeof err) == 0);
    CHECK(sr__etcd_lease_revoke(c, kept_id, err, sizeof err) == 0); /* gone already: no error */
    /* a put with a lease that is gone: etcd's own message, the member and the operation named */
    int rc = sr__etcd_put(c, "lease/late", "x", 1, kept_id, NULL, err, sizeof err);
    check_rejected(rc == 0, err, "etcd at http://", "put \"lease/late\": etcdserver: requested lease not found",
                   "a put with a revoked lease", __FILE__, __LINE__, 0);
}

/* ---- watches ------------------------------------------------------------------------------------- */

typedef struct want_event {
    sr__etcd_event_type type;
    const char *key, *value;
    int64_t rev;
} want_event;

/* The next n events are these, in this order, each within 8 s. */
static void expect_events(sr__etcd_watch *w, const want_event *want, int n, const char *what) {
    for (int i = 0; i < n; i++) {
        sr__etcd_event ev;
        int rc = 0;
        double t0 = now_s();
        while (rc == 0 && now_s() - t0 < 8) rc = sr__etcd_watch_next(w, 500, &ev, err, sizeof err);
        if (rc != 1) {
            check_count++, check_failures++;
            fprintf(stderr, "%s: event %d (%s %s): %s\n", what, i, want[i].type == SR__ETCD_PUT ? "put" : "delete",
                    want[i].key, rc < 0 ? err : "none within 8 s");
            return;
        }
        int ok = ev.type == want[i].type && !strcmp(ev.kv.key, want[i].key) && ev.kv.mod_revision == want[i].rev &&
                 (!want[i].value || !strcmp(ev.kv.value, want[i].value));
        check_count++;
        if (!ok) {
            check_failures++;
            fprintf(stderr, "%s: event %d: got %s %s = %s at %" PRId64 ", want %s %s at %" PRId64 "\n", what, i,
                    ev.type == SR__ETCD_PUT ? "put" : "delete", ev.kv.key, ev.kv.value, ev.kv.mod_revision,
                    want[i].type == SR__ETCD_PUT ? "put" : "delete", want[i].key, want[i].rev);
        }
    }
    sr__etcd_event ev;
    CHECK(sr__etcd_watch_next(w, 300, &ev, err, sizeof err) == 0); /* nothing more */
}

static sr__etcd_watch *check_watch(sr__etcd *c) {
    printf("== watch\n");
    int64_t rev0 = 0, r1 = 0, r2 = 0, r3;
    CHECK(sr__etcd_put(c, "watch/before", "0", 1, 0, &rev0, err, sizeof err) == 0);
    sr__etcd_watch *w = sr__etcd_watch_open(c, "watch/", rev0 + 1, err, sizeof err);
    if (!w) {
        fprintf(stderr, "FAIL: watch: %s\n", err);
        exit(1);
    }
    CHECK(sr__etcd_put(c, "watch/a", "1", 1, 0, &r1, err, sizeof err) == 0);
    CHECK(sr__etcd_put(c, "other/x", "-", 1, 0, NULL, err, sizeof err) == 0); /* not under the prefix */
    CHECK(sr__etcd_put(c, "watch/b", "2", 1, 0, &r2, err, sizeof err) == 0);
    CHECK(sr__etcd_delete(c, "watch/a", 0, NULL, err, sizeof err) == 0);
    CHECK(sr__etcd_delete(c, "watch/none", 0, NULL, err, sizeof err) == 0); /* deletes nothing: no event */
    r3 = r2 + 1; /* the delete of watch/a: deleting nothing (watch/none) makes no revision */
    want_event want[] = {
        {SR__ETCD_PUT, "watch/a", "1", r1}, {SR__ETCD_PUT, "watch/b", "2", r2}, {SR__ETCD_DELETE, "watch/a", "", r3}};
    expect_events(w, want, 3, "watch");
    printf("  put, put, delete seen in order (revisions %" PRId64 ", %" PRId64 ", %" PRId64 ")\n", r1, r2, r3);
    return w;
}

/* ---- a member killed ---------------------------------------------------------------------------- */

static void check_failover(sr__etcd *c, sr__etcd_watch *w, const char *endpoints, const char *pids) {
    printf("== the client's member killed\n");
    char lost[128];
    snprintf(lost, sizeof lost, "%s", sr__etcd_endpoint(c));
    CHECK(!strcmp(sr__etcd_watch_endpoint(w), lost));
    /* the member's pid: the same position in pids as its address in endpoints */
    char list[512], plist[256];
    snprintf(list, sizeof list, "%s", endpoints);
    snprintf(plist, sizeof plist, "%s", pids);
    char *s1 = NULL, *s2 = NULL, *e = strtok_r(list, ",", &s1), *p = strtok_r(plist, ",", &s2);
    pid_t pid = 0;
    for (; e && p; e = strtok_r(NULL, ",", &s1), p = strtok_r(NULL, ",", &s2))
        if (!strcmp(lost + strlen("http://"), e)) pid = (pid_t)atoi(p);
    if (pid <= 0 || kill(pid, SIGKILL) != 0) {
        fprintf(stderr, "FAIL: harness: no pid to kill for the member at %s\n", lost);
        check_count++, check_failures++;
        return;
    }
    printf("  killed the member at %s (pid %d)\n", lost, (int)pid);
    double t0 = now_s();
    int64_t r1 = 0, r2 = 0, r3 = 0, lease = 0, deleted = 0;
    /* every operation goes on, on the other two members.  A read first: were the killed member the
       leader, a write during the election could time out on a follower and be applied twice when
       retried (etcd.h), which would make the revisions below differ by one */
    sr__etcd_kvs r;
    CHECK(sr__etcd_range(c, "watch/", &r, err, sizeof err) == 0 && r.n == 2); /* before, b */
    if (r.n != 2) fprintf(stderr, "range after the kill: %s\n", err);
    sr__etcd_kvs_free(&r);
    printf("  first read after the kill: %.2f s, on %s\n", now_s() - t0, sr__etcd_endpoint(c));
    CHECK(strcmp(sr__etcd_endpoint(c), lost) != 0);
    CHECK(sr__etcd_put(c, "watch/c", "3", 1, 0, &r1, err, sizeof err) == 0);
    CHECK(sr__etcd_cas(c, "watch/d", 0, "4", 1, 0, NULL, &r2, err, sizeof err) == 1);
    const char *v = value_of(c, "watch/c");
    CHECK(v && !strcmp(v, "3"));
    CHECK(sr__etcd_range(c, "watch/", &r, err, sizeof err) == 0 && r.n == 4); /* before, b, c, d */
    sr__etcd_kvs_free(&r);
    CHECK(sr__etcd_lease_grant(c, 5, &lease, NULL, err, sizeof err) == 0);
    CHECK(sr__etcd_lease_keepalive(c, lease, NULL, err, sizeof err) == 1);
    CHECK(sr__etcd_put(c, "watch/e", "5", 1, lease, &r3, err, sizeof err) == 0);
    CHECK(sr__etcd_lease_revoke(c, lease, err, sizeof err) == 0);
    CHECK(sr__etcd_delete(c, "watch/c", 0, &deleted, err, sizeof err) == 0 && deleted == 1);
    printf("  put, compare-and-swap, get, range, lease grant/keepalive/revoke, delete: done in %.2f s\n", now_s() - t0);
    /* the watch resumes on another member from where it was: each event once, in order, the
       revoke's delete of watch/e included */
    want_event want[] = {{SR__ETCD_PUT, "watch/c", "3", r1},
                         {SR__ETCD_PUT, "watch/d", "4", r2},
                         {SR__ETCD_PUT, "watch/e", "5", r3},
                         {SR__ETCD_DELETE, "watch/e", "", r3 + 1},
                         {SR__ETCD_DELETE, "watch/c", "", r3 + 2}};
    expect_events(w, want, 5, "watch after the kill");
    CHECK(strcmp(sr__etcd_watch_endpoint(w), lost) != 0);
    printf("  the watch delivered the 5 changes since, in order, from %s\n", sr__etcd_watch_endpoint(w));
}

static void check_compacted(sr__etcd *c) {
    printf("== a watch from a compacted revision\n");
    int64_t rev = 0;
    CHECK(sr__etcd_put(c, "compact/x", "1", 1, 0, &rev, err, sizeof err) == 0);
    CHECK(sr__etcd_compact(c, rev, err, sizeof err) == 0);
    sr__etcd_watch *w = sr__etcd_watch_open(c, "compact/", 2, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    sr__etcd_event ev;
    int rc = sr__etcd_watch_next(w, 3000, &ev, err, sizeof err);
    check_rejected(rc >= 0, err, "etcd at http://", "has compacted its history up to revision", "a compacted watch",
                   __FILE__, __LINE__, 0);
    CHECK(sr__etcd_watch_compacted(w) == rev);
    CHECK(sr__etcd_watch_next(w, 10, &ev, err, sizeof err) == -1); /* and stays ended */
    sr__etcd_watch_close(w);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s HOST:PORT,... PID,...  (tests/etcd/cluster.sh starts the cluster)\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    check_unreachable();
    if (wait_ready(argv[1]) != 0) return 1;
    sr__etcd *c = open_or_die(argv[1], &opts);
    check_keys(c);
    check_cas(c, argv[1]);
    check_leases(c);
    sr__etcd_watch *w = check_watch(c);
    check_failover(c, w, argv[1], argv[2]);
    check_compacted(c);
    sr__etcd_watch_close(w);
    sr__etcd_close(c);
    return CHECK_DONE();
}
