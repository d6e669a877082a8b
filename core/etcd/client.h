/*
 * The client's inside (etcd.h's sr__etcd), shared by the files of core/etcd/: the member list, one
 * libcurl handle, and the two ways a request goes out.  kv.c, lease.c and watch.c build a request's
 * JSON, send it with sr__etcd_call (failing over) or sr__etcd_post (one member: the watch's probe),
 * and read the fields of the sr__etcd_reply they get.
 */
#ifndef SR__ETCD_CLIENT_H
#define SR__ETCD_CLIENT_H

#include "etcd/curl_lib.h"
#include <stddef.h>

#include "base/strbuf.h"
#include "etcd/etcd.h"
#include "etcd/reply.h"

/* The largest answer read (a range over many keys): more is refused, not buffered without end. */
#define SR__ETCD_MAX_ANSWER ((size_t)256 << 20)

struct sr__etcd {
    char *spec;  /* the endpoint list as given */
    char **urls; /* "http://host:port", one per member */
    size_t n;
    size_t cur;         /* where requests go first: the member that answered last */
    sr__etcd_opts opts; /* the defaults applied */
    CURL *easy;         /* kept between requests: its connection to the current member stays open */
    struct curl_slist *headers;
    sr__buf in; /* the answer being received */
    int in_too_big;
    char (*why)[200]; /* each member's last failure, for the message when none answers */
};

/* A libcurl handle set up as every request of ours is (plain HTTP, no proxy from the environment,
   no signals, the connect timeout); NULL when libcurl has no memory. */
CURL *sr__etcd_curl_new(const sr__etcd_opts *opts);

/* One request to member m, answered within timeout_ms: 0 with the answer in r (which may be
   etcd's error: r->error, r->error_code), or -1 when the member did not answer (refused, timed
   out, a broken answer; `why` says how, r is empty). */
int sr__etcd_post(sr__etcd *c, size_t m, const char *path, const char *body, int timeout_ms, sr__etcd_reply *r,
                  char *why, size_t whylen);

/* The request to the current member, then to the next ones in turn, until one answers with
   anything but "unavailable" (no leader, leader changed, timed out, too many requests), within
   opts.op_timeout_ms.  0 with the answer in r; -1 with err: no member answered (each one's last
   failure named), or etcd's error (r->error_code says which: the caller may accept one).  op names
   the operation and its key for the message ("put \"job/a\"").  r is the caller's to free either way. */
int sr__etcd_call(sr__etcd *c, const char *op, const char *path, const char *body, sr__etcd_reply *r, char *err,
                  size_t errlen);

#endif
