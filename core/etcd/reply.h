/*
 * etcd's JSON answers, read into one structure whatever the call (client.c parses every answer
 * through here; kv.c, lease.c and watch.c read the fields their call fills).
 *
 * The gateway writes proto3 JSON: int64s as strings ("revision": "12"), fields at their default
 * (0, false, PUT) left out, keys and values in base64.  A streamed answer (a watch, a keepalive)
 * is one object per line, each wrapped as {"result": {...}}, or {"error": {...}}; a unary call's
 * error is {"error": "...", "code": N, "message": "..."} with N the gRPC status code.
 */
#ifndef SR__ETCD_REPLY_H
#define SR__ETCD_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "etcd/etcd.h"

/* gRPC status codes the client acts on */
enum {
    SR__GRPC_DEADLINE = 4,      /* DeadlineExceeded */
    SR__GRPC_NOT_FOUND = 5,     /* NotFound: a lease that is gone */
    SR__GRPC_EXHAUSTED = 8,     /* ResourceExhausted: "etcdserver: too many requests" */
    SR__GRPC_OUT_OF_RANGE = 11, /* OutOfRange: "required revision has been compacted" */
    SR__GRPC_UNAVAILABLE = 14   /* Unavailable: no leader, leader changed, request timed out, stopping */
};

typedef struct sr__etcd_reply {
    int64_t revision; /* the header's: the store's revision when the member answered */
    sr__etcd_kv *kvs; /* "kvs", also a transaction's response_range's */
    size_t nkvs, kvcap;
    sr__etcd_event *events; /* a watch message's */
    size_t nevents, evcap;
    int succeeded;            /* a transaction's compare held */
    int64_t deleted;          /* deleterange */
    int64_t id, ttl;          /* a lease's (ttl 0 in a keepalive answer: the lease is gone) */
    int created, canceled;    /* a watch's first message; its last */
    int64_t compact_revision; /* a watch canceled because its start revision was compacted */
    char *cancel_reason;
    int error_code; /* an error answer: its gRPC code, or -HTTP status when the body was no etcd error */
    char *error;    /* its message, or NULL: the answer is not an error */
} sr__etcd_reply;

/* Reads text[0 .. n) into r (zeroed first; freed with sr__etcd_reply_free even on failure).  -1
   with the reason when it is not one of etcd's answers, or memory is short. */
int sr__etcd_reply_parse(const char *text, size_t n, sr__etcd_reply *r, char *err, size_t errlen);
void sr__etcd_reply_free(sr__etcd_reply *r);
void sr__etcd_kv_free(sr__etcd_kv *kv);

#endif
