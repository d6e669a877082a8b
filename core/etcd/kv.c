/* Keys (etcd.h): put, get, range, delete, compare-and-swap, compaction. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fail.h"
#include "etcd/base64.h"
#include "etcd/client.h"
#include "etcd/request.h"

void sr__etcd_kvs_free(sr__etcd_kvs *r) {
    if (!r) return;
    for (size_t i = 0; i < r->n; i++) sr__etcd_kv_free(&r->kv[i]);
    free(r->kv);
    memset(r, 0, sizeof *r);
}

/* Sends the request in b (freed here) and leaves the answer in r: 0, or -1 with err. */
static int send_request(sr__etcd *c, const char *op, const char *path, sr__buf *b, sr__etcd_reply *r, char *err,
                        size_t errlen) {
    memset(r, 0, sizeof *r);
    if (b->oom) {
        sr__buf_free(b);
        return sr__fail(err, errlen, "etcd %s: out of memory for the request", op);
    }
    int rc = sr__etcd_call(c, op, path, b->s, r, err, errlen);
    sr__buf_free(b);
    return rc;
}

/* The answer's keys, moved to out. */
static void take_kvs(sr__etcd_reply *r, sr__etcd_kvs *out) {
    out->kv = r->kvs;
    out->n = r->nkvs;
    out->revision = r->revision;
    r->kvs = NULL;
    r->nkvs = r->kvcap = 0;
}

static void add_value(sr__buf *b, const void *value, size_t len, int64_t lease) {
    SR__ETCD_ADD(b, ",\"value\":\"");
    sr__etcd_b64_add(b, value, len);
    SR__ETCD_ADD(b, "\"");
    if (lease) sr__etcd_add_int64(b, "lease", lease);
}

int sr__etcd_put(sr__etcd *c, const char *key, const void *value, size_t len, int64_t lease, int64_t *revision,
                 char *err, size_t errlen) {
    char op[160];
    snprintf(op, sizeof op, "put \"%.120s\"", key);
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{");
    sr__etcd_add_key(&b, key, 0);
    add_value(&b, value, len, lease);
    SR__ETCD_ADD(&b, "}");
    sr__etcd_reply r;
    int rc = send_request(c, op, "/v3/kv/put", &b, &r, err, errlen);
    if (rc == 0 && revision) *revision = r.revision;
    sr__etcd_reply_free(&r);
    return rc;
}

static int read_range(sr__etcd *c, const char *what, const char *key, int prefix, sr__etcd_kvs *out, char *err,
                      size_t errlen) {
    memset(out, 0, sizeof *out);
    char op[160];
    snprintf(op, sizeof op, "%s \"%.120s\"", what, key);
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{");
    sr__etcd_add_key(&b, key, prefix);
    SR__ETCD_ADD(&b, "}");
    sr__etcd_reply r;
    int rc = send_request(c, op, "/v3/kv/range", &b, &r, err, errlen);
    if (rc == 0) take_kvs(&r, out);
    sr__etcd_reply_free(&r);
    return rc;
}

int sr__etcd_get(sr__etcd *c, const char *key, sr__etcd_kvs *out, char *err, size_t errlen) {
    return read_range(c, "get", key, 0, out, err, errlen);
}

int sr__etcd_range(sr__etcd *c, const char *prefix, sr__etcd_kvs *out, char *err, size_t errlen) {
    return read_range(c, "range of the prefix", prefix, 1, out, err, errlen);
}

int sr__etcd_delete(sr__etcd *c, const char *key, int prefix, int64_t *deleted, char *err, size_t errlen) {
    char op[160];
    snprintf(op, sizeof op, "delete %s\"%.120s\"", prefix ? "of the prefix " : "", key);
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{");
    sr__etcd_add_key(&b, key, prefix);
    SR__ETCD_ADD(&b, "}");
    sr__etcd_reply r;
    int rc = send_request(c, op, "/v3/kv/deleterange", &b, &r, err, errlen);
    if (rc == 0 && deleted) *deleted = r.deleted;
    sr__etcd_reply_free(&r);
    return rc;
}

int sr__etcd_cas(sr__etcd *c, const char *key, int64_t expect, const void *value, size_t len, int64_t lease,
                 sr__etcd_kvs *current, int64_t *revision, char *err, size_t errlen) {
    if (current) memset(current, 0, sizeof *current);
    char op[200];
    snprintf(op, sizeof op, "compare-and-swap of \"%.120s\" (expecting mod_revision %" PRId64 ")", key, expect);
    /* compare the key's mod_revision (0 for a key that does not exist); on success put, on
       failure read the key as it is */
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{\"compare\":[{");
    sr__etcd_add_key(&b, key, 0);
    SR__ETCD_ADD(&b, ",\"target\":\"MOD\",\"result\":\"EQUAL\"");
    sr__etcd_add_int64(&b, "mod_revision", expect);
    SR__ETCD_ADD(&b, "}],\"success\":[{\"request_put\":{");
    sr__etcd_add_key(&b, key, 0);
    add_value(&b, value, len, lease);
    SR__ETCD_ADD(&b, "}}],\"failure\":[{\"request_range\":{");
    sr__etcd_add_key(&b, key, 0);
    SR__ETCD_ADD(&b, "}}]}");
    sr__etcd_reply r;
    int rc = send_request(c, op, "/v3/kv/txn", &b, &r, err, errlen);
    if (rc == 0) {
        rc = r.succeeded ? 1 : 0;
        if (rc == 1 && revision) *revision = r.revision;
        if (rc == 0 && current) take_kvs(&r, current);
    }
    sr__etcd_reply_free(&r);
    return rc;
}

int sr__etcd_compact(sr__etcd *c, int64_t revision, char *err, size_t errlen) {
    char op[80];
    snprintf(op, sizeof op, "compaction to revision %" PRId64, revision);
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{");
    sr__buf_printf(&b, "\"revision\":\"%" PRId64 "\"", revision);
    SR__ETCD_ADD(&b, "}");
    sr__etcd_reply r;
    int rc = send_request(c, op, "/v3/kv/compaction", &b, &r, err, errlen);
    sr__etcd_reply_free(&r);
    return rc;
}
