/* Leases (etcd.h): grant, keepalive, revoke. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/fail.h"
#include "etcd/client.h"
#include "etcd/request.h"

/* {"TTL": "t"} or {"ID": "id"} to path: 0 with the answer in r, or -1 with err. */
static int lease_call(sr__etcd *c, const char *op, const char *path, const char *field, int64_t v, sr__etcd_reply *r,
                      char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char body[64];
    snprintf(body, sizeof body, "{\"%s\":\"%" PRId64 "\"}", field, v);
    return sr__etcd_call(c, op, path, body, r, err, errlen);
}

int sr__etcd_lease_grant(sr__etcd *c, int64_t ttl_s, int64_t *id, int64_t *granted_ttl, char *err, size_t errlen) {
    char op[80];
    snprintf(op, sizeof op, "lease grant (TTL %" PRId64 " s)", ttl_s);
    if (ttl_s < 1) return sr__fail(err, errlen, "etcd %s: a lease needs a TTL of at least 1 second", op);
    sr__etcd_reply r;
    int rc = lease_call(c, op, "/v3/lease/grant", "TTL", ttl_s, &r, err, errlen);
    if (rc == 0 && r.id == 0)
        rc = sr__fail(err, errlen, "etcd at %s: %s: the answer holds no lease ID", sr__etcd_endpoint(c), op);
    if (rc == 0) {
        *id = r.id;
        if (granted_ttl) *granted_ttl = r.ttl;
    }
    sr__etcd_reply_free(&r);
    return rc;
}

int sr__etcd_lease_keepalive(sr__etcd *c, int64_t id, int64_t *ttl_left, char *err, size_t errlen) {
    char op[80];
    snprintf(op, sizeof op, "keepalive of lease %" PRId64, id);
    /* the gateway answers a single renewal on this stream with one {"result": {...}} and ends it */
    sr__etcd_reply r;
    int rc = lease_call(c, op, "/v3/lease/keepalive", "ID", id, &r, err, errlen);
    if (rc == 0) {
        /* a lease that is gone is renewed with TTL 0, which proto3 leaves out */
        rc = r.ttl > 0 ? 1 : 0;
        if (ttl_left) *ttl_left = r.ttl;
    }
    sr__etcd_reply_free(&r);
    return rc;
}

int sr__etcd_lease_revoke(sr__etcd *c, int64_t id, char *err, size_t errlen) {
    char op[80];
    snprintf(op, sizeof op, "revoke of lease %" PRId64, id);
    sr__etcd_reply r;
    int rc = lease_call(c, op, "/v3/lease/revoke", "ID", id, &r, err, errlen);
    if (rc != 0 && r.error && r.error_code == SR__GRPC_NOT_FOUND) { /* expired already: its keys are gone */
        rc = 0;
        if (err && errlen) err[0] = 0;
    }
    sr__etcd_reply_free(&r);
    return rc;
}
