/*
 * An etcd v3 client over etcd's HTTP/JSON gateway (libcurl), for the etcd rendezvous backend
 * (docs/etcd.md says why this transport, and which server it was tested against).
 *
 * Lifecycle: sr__etcd_open(list of members) -> operations, one at a time (a client is one
 * thread's: give another thread its own client) -> sr__etcd_close.  A watch is opened from a
 * client but owns its own connections: it may be read in another thread than its client's.
 *
 *     sr__etcd *c = sr__etcd_open("10.0.0.1:2379,10.0.0.2:2379", NULL, err, sizeof err);
 *     int64_t lease;
 *     sr__etcd_lease_grant(c, 10, &lease, NULL, err, sizeof err);
 *     int won = sr__etcd_cas(c, "job/leader", 0, "agent-3", 7, lease, &cur, NULL, err, sizeof err);
 *     ... sr__etcd_lease_keepalive(c, lease, NULL, err, sizeof err) every few seconds ...
 *     sr__etcd_watch *w = sr__etcd_watch_open(c, "job/", rev + 1, err, sizeof err);
 *     while ((r = sr__etcd_watch_next(w, 1000, &ev, err, sizeof err)) >= 0) if (r) ...ev...;
 *
 * Members: requests go to one member; when it does not answer (refused, no answer within the
 * attempt's timeout, or etcd says it is unavailable: no leader, leader changed, request timed
 * out), the client moves on to the next member of the list and stays there.  Every operation ends
 * within opts.op_timeout_ms, whatever the members do: never a hang.  A request whose answer was
 * lost may have been applied before the client retried it on another member: a put or a delete is
 * the same applied twice, and a compare-and-swap that finds its own write reports it lost, the
 * current value in *current showing the caller its own (write values that name their writer).
 *
 * Keys are C strings; values are bytes (value, len), and the values read back are NUL-terminated
 * too.  Revisions, lease ids and TTLs are etcd's int64s.
 *
 * Errors: -1 with a message in err naming the member (its URL), the operation and its key, and
 * what etcd said ("etcdserver: requested lease not found") or why no member answered (each one's
 * failure).  Nothing prints, nothing exits; every allocation is checked ("out of memory for ...").
 */
#ifndef SR__ETCD_ETCD_H
#define SR__ETCD_ETCD_H

#include <stddef.h>
#include <stdint.h>

typedef struct sr__etcd sr__etcd;
typedef struct sr__etcd_watch sr__etcd_watch;

typedef struct sr__etcd_opts {
    int connect_timeout_ms; /* one member's TCP connect (default 1000) */
    int attempt_timeout_ms; /* one member's answer to one request (default 3000) */
    int op_timeout_ms;      /* one operation, across members and retries (default 10000) */
    int watch_probe_ms;     /* a watch silent this long asks its member whether it still serves (a
                               read that needs a quorum), and moves on when it does not (default 5000) */
} sr__etcd_opts;

/* One key as etcd holds it. */
typedef struct sr__etcd_kv {
    char *key;
    size_t key_len;
    char *value; /* NUL-terminated after value_len bytes; "" for a delete event */
    size_t value_len;
    int64_t create_revision, mod_revision, version, lease;
} sr__etcd_kv;

/* What a read found: n keys, in key order, and the store's revision it saw. */
typedef struct sr__etcd_kvs {
    sr__etcd_kv *kv;
    size_t n;
    int64_t revision;
} sr__etcd_kvs;
void sr__etcd_kvs_free(sr__etcd_kvs *r);

/* endpoints: "host:port[,host:port...]", each optionally "http://host:port" (no TLS yet); opts
   NULL, or fields 0, for the defaults.  Connects to nothing yet.  NULL when the list is malformed
   (the message names the entry) or memory is short. */
sr__etcd *sr__etcd_open(const char *endpoints, const sr__etcd_opts *opts, char *err, size_t errlen);
void sr__etcd_close(sr__etcd *c);
/* The member the next request goes to first ("http://host:port"): the last one that answered. */
const char *sr__etcd_endpoint(const sr__etcd *c);

/* ---- keys (kv.c) ---- */
/* Sets key to value (attached to lease, or 0); *revision (may be NULL): the store's revision after. */
int sr__etcd_put(sr__etcd *c, const char *key, const void *value, size_t len, int64_t lease, int64_t *revision,
                 char *err, size_t errlen);
/* out->n is 1 (the key) or 0 (absent).  Free with sr__etcd_kvs_free. */
int sr__etcd_get(sr__etcd *c, const char *key, sr__etcd_kvs *out, char *err, size_t errlen);
/* Every key starting with prefix ("" is every key), in key order. */
int sr__etcd_range(sr__etcd *c, const char *prefix, sr__etcd_kvs *out, char *err, size_t errlen);
/* Deletes key, or with prefix != 0 every key starting with it; *deleted (may be NULL): how many. */
int sr__etcd_delete(sr__etcd *c, const char *key, int prefix, int64_t *deleted, char *err, size_t errlen);
/* Compare-and-swap in one transaction: puts key = value (with lease, or 0) only when the key's
   mod_revision is `expect` (0: the key does not exist: create-if-absent).  1 when written
   (*revision: its revision), 0 when not (*current, which may be NULL: the key as it is now, n = 0
   when absent), -1 on an error. */
int sr__etcd_cas(sr__etcd *c, const char *key, int64_t expect, const void *value, size_t len, int64_t lease,
                 sr__etcd_kvs *current, int64_t *revision, char *err, size_t errlen);
/* Discards the history before revision (what a watch from an older revision then reports). */
int sr__etcd_compact(sr__etcd *c, int64_t revision, char *err, size_t errlen);

/* ---- leases (lease.c): keys put with a lease are deleted when it expires ---- */
/* A lease of ttl_s seconds: *id, and *granted_ttl (may be NULL; etcd may raise a short TTL to its
   minimum). */
int sr__etcd_lease_grant(sr__etcd *c, int64_t ttl_s, int64_t *id, int64_t *granted_ttl, char *err, size_t errlen);
/* Renews the lease for its TTL: 1 (*ttl_left, may be NULL: its TTL again), 0 when the lease no
   longer exists (expired or revoked: its keys are gone), -1 on an error. */
int sr__etcd_lease_keepalive(sr__etcd *c, int64_t id, int64_t *ttl_left, char *err, size_t errlen);
/* Ends the lease now, deleting its keys; a lease already gone is no error. */
int sr__etcd_lease_revoke(sr__etcd *c, int64_t id, char *err, size_t errlen);

/* ---- watches (watch.c): the changes under a prefix, in order ---- */
typedef enum sr__etcd_event_type { SR__ETCD_PUT = 1, SR__ETCD_DELETE = 2 } sr__etcd_event_type;
typedef struct sr__etcd_event {
    sr__etcd_event_type type;
    sr__etcd_kv kv; /* kv.mod_revision: the event's revision; a delete has the key only */
} sr__etcd_event;

/* Watches every key starting with prefix, from start_revision (0: from now).  Connects at once
   (to the client's current member, then the others): NULL when none answers within the client's
   op_timeout_ms. */
sr__etcd_watch *sr__etcd_watch_open(sr__etcd *c, const char *prefix, int64_t start_revision, char *err, size_t errlen);
/* Waits at most timeout_ms for the next event: 1 with *ev filled (valid until the next call), 0
   when none came, -1 when the watch ended (every later call too): no member answered within
   op_timeout_ms, or etcd compacted the revisions it had to deliver next
   (sr__etcd_watch_compacted).  Events come once each, in revision order, also across a member's
   loss: the watch resumes on another member from the revision after the last one it delivered. */
int sr__etcd_watch_next(sr__etcd_watch *w, int timeout_ms, sr__etcd_event *ev, char *err, size_t errlen);
/* etcd's compact revision when the watch ended because of it (read the keys again, then watch
   from the read's revision + 1), or 0. */
int64_t sr__etcd_watch_compacted(const sr__etcd_watch *w);
/* The member the watch streams from now, or the one it tries next. */
const char *sr__etcd_watch_endpoint(const sr__etcd_watch *w);
void sr__etcd_watch_close(sr__etcd_watch *w);

#endif
