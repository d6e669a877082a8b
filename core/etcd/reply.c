/* etcd's answers (reply.h), read with the strict JSON reader. */
#include "etcd/reply.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/fail.h"
#include "etcd/base64.h"
#include "io/json.h"

void sr__etcd_kv_free(sr__etcd_kv *kv) {
    free(kv->key);
    free(kv->value);
    memset(kv, 0, sizeof *kv);
}

void sr__etcd_reply_free(sr__etcd_reply *r) {
    for (size_t i = 0; i < r->nkvs; i++) sr__etcd_kv_free(&r->kvs[i]);
    for (size_t i = 0; i < r->nevents; i++) sr__etcd_kv_free(&r->events[i].kv);
    free(r->kvs);
    free(r->events);
    free(r->cancel_reason);
    free(r->error);
    memset(r, 0, sizeof *r);
}

/* The walk's state: the reader, and the first failure that is not the reader's own. */
typedef struct walk {
    sr__json j;
    const char *oom; /* what memory was short for, or NULL */
} walk;

static int oom(walk *w, const char *what) {
    if (!w->oom) w->oom = what;
    return -1;
}

/* An int64: proto3 JSON writes them as strings ("12"); a plain number is read too. */
static int read_int64(walk *w, int64_t *out) {
    if (sr__json_peek(&w->j) == SR__JSON_NUMBER) {
        sr__json_num num;
        if (sr__json_number(&w->j, &num) != 0) return -1;
        if (num.value != (double)(int64_t)num.value) return sr__json_fail(&w->j, "expected an integer");
        *out = (int64_t)num.value;
        return 0;
    }
    const char *s;
    size_t len;
    if (sr__json_string(&w->j, &s, &len) != 0) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!len || end != s + len || errno) return sr__json_fail(&w->j, "expected an integer in a string");
    *out = v;
    return 0;
}

/* A base64 string decoded into a new NUL-terminated block. */
static int read_b64(walk *w, char **out, size_t *outlen) {
    const char *s;
    size_t len;
    if (sr__json_string(&w->j, &s, &len) != 0) return -1;
    char *bytes = sr__malloc(sr__etcd_b64_max(len) + 1);
    if (!bytes) return oom(w, "a key or value");
    long long n = sr__etcd_b64_decode(s, len, (unsigned char *)bytes);
    if (n < 0) {
        free(bytes);
        return sr__json_fail(&w->j, "expected base64");
    }
    bytes[n] = 0;
    free(*out);
    *out = bytes;
    *outlen = (size_t)n;
    return 0;
}

static int read_string_copy(walk *w, char **out) {
    const char *s;
    size_t len;
    if (sr__json_string(&w->j, &s, &len) != 0) return -1;
    char *copy = sr__strndup(s, len);
    if (!copy) return oom(w, "a message");
    free(*out);
    *out = copy;
    return 0;
}

/* {"key": .., "value": .., "create_revision": .., ...}: kv is zeroed by the caller, and owns what
   it got even on failure.  A missing value (a delete event's) reads as "". */
static int read_kv(walk *w, sr__etcd_kv *kv) {
    const char *key;
    size_t klen;
    int r;
    if (sr__json_object(&w->j) != 0) return -1;
    while ((r = sr__json_member(&w->j, &key, &klen)) > 0) {
        int rc;
        if (sr__json_key_is(key, klen, "key")) rc = read_b64(w, &kv->key, &kv->key_len);
        else if (sr__json_key_is(key, klen, "value")) rc = read_b64(w, &kv->value, &kv->value_len);
        else if (sr__json_key_is(key, klen, "create_revision")) rc = read_int64(w, &kv->create_revision);
        else if (sr__json_key_is(key, klen, "mod_revision")) rc = read_int64(w, &kv->mod_revision);
        else if (sr__json_key_is(key, klen, "version")) rc = read_int64(w, &kv->version);
        else if (sr__json_key_is(key, klen, "lease")) rc = read_int64(w, &kv->lease);
        else rc = sr__json_skip(&w->j);
        if (rc != 0) return -1;
    }
    if (r < 0) return -1;
    if (!kv->key && !(kv->key = sr__strdup(""))) return oom(w, "a key");
    if (!kv->value && !(kv->value = sr__strdup(""))) return oom(w, "a value");
    return 0;
}

static int read_kvs(walk *w, sr__etcd_reply *r) {
    int e;
    if (sr__json_array(&w->j) != 0) return -1;
    while ((e = sr__json_element(&w->j)) > 0) {
        if (sr__grow((void **)&r->kvs, &r->kvcap, r->nkvs + 1, sizeof *r->kvs) != 0) return oom(w, "the keys read");
        sr__etcd_kv *kv = &r->kvs[r->nkvs++];
        memset(kv, 0, sizeof *kv);
        if (read_kv(w, kv) != 0) return -1;
    }
    return e;
}

/* {"type": "DELETE", "kv": {...}, "prev_kv": ...}; the type is left out for a PUT (proto3's default). */
static int read_event(walk *w, sr__etcd_event *ev) {
    const char *key;
    size_t klen;
    int r;
    ev->type = SR__ETCD_PUT;
    if (sr__json_object(&w->j) != 0) return -1;
    while ((r = sr__json_member(&w->j, &key, &klen)) > 0) {
        int rc;
        if (sr__json_key_is(key, klen, "type")) {
            const char *t;
            size_t tlen;
            if (sr__json_peek(&w->j) == SR__JSON_NUMBER) {
                sr__json_num num;
                rc = sr__json_number(&w->j, &num);
                if (rc == 0) ev->type = num.value == 1 ? SR__ETCD_DELETE : SR__ETCD_PUT;
            } else if ((rc = sr__json_string(&w->j, &t, &tlen)) == 0) {
                if (sr__json_key_is(t, tlen, "DELETE")) ev->type = SR__ETCD_DELETE;
                else if (!sr__json_key_is(t, tlen, "PUT")) rc = sr__json_fail(&w->j, "expected PUT or DELETE");
            }
        } else if (sr__json_key_is(key, klen, "kv")) {
            rc = read_kv(w, &ev->kv);
        } else {
            rc = sr__json_skip(&w->j);
        }
        if (rc != 0) return -1;
    }
    if (r < 0) return -1;
    if (!ev->kv.key && (!(ev->kv.key = sr__strdup("")) || !(ev->kv.value = sr__strdup("")))) return oom(w, "an event");
    return 0;
}

static int read_events(walk *w, sr__etcd_reply *r) {
    int e;
    if (sr__json_array(&w->j) != 0) return -1;
    while ((e = sr__json_element(&w->j)) > 0) {
        if (sr__grow((void **)&r->events, &r->evcap, r->nevents + 1, sizeof *r->events) != 0)
            return oom(w, "the events read");
        sr__etcd_event *ev = &r->events[r->nevents++];
        memset(ev, 0, sizeof *ev);
        if (read_event(w, ev) != 0) return -1;
    }
    return e;
}

static int read_header(walk *w, sr__etcd_reply *r, int nested) {
    const char *key;
    size_t klen;
    int m;
    int64_t rev = 0;
    if (sr__json_object(&w->j) != 0) return -1;
    while ((m = sr__json_member(&w->j, &key, &klen)) > 0)
        if ((sr__json_key_is(key, klen, "revision") ? read_int64(w, &rev) : sr__json_skip(&w->j)) != 0) return -1;
    if (m < 0) return -1;
    if (!nested) r->revision = rev; /* a transaction's inner answers carry headers of their own */
    return 0;
}

/* A stream's error: {"grpc_code": N, "http_code": N, "message": "...", "http_status": "..."}. */
static int read_stream_error(walk *w, sr__etcd_reply *r) {
    const char *key;
    size_t klen;
    int m;
    if (sr__json_object(&w->j) != 0) return -1;
    while ((m = sr__json_member(&w->j, &key, &klen)) > 0) {
        int rc;
        if (sr__json_key_is(key, klen, "grpc_code")) {
            int64_t code;
            rc = read_int64(w, &code);
            r->error_code = (int)code;
        } else if (sr__json_key_is(key, klen, "message")) {
            rc = read_string_copy(w, &r->error);
        } else {
            rc = sr__json_skip(&w->j);
        }
        if (rc != 0) return -1;
    }
    if (m < 0) return -1;
    if (!r->error && !(r->error = sr__strdup("(no message)"))) return oom(w, "a message");
    return 0;
}

static int read_object(walk *w, sr__etcd_reply *r, int nested);

/* A transaction's "responses": [{"response_range": {...}}, {"response_put": {...}}] */
static int read_responses(walk *w, sr__etcd_reply *r) {
    int e;
    if (sr__json_array(&w->j) != 0) return -1;
    while ((e = sr__json_element(&w->j)) > 0) {
        const char *key;
        size_t klen;
        int m;
        if (sr__json_object(&w->j) != 0) return -1;
        while ((m = sr__json_member(&w->j, &key, &klen)) > 0)
            if (read_object(w, r, 1) != 0) return -1;
        if (m < 0) return -1;
    }
    return e;
}

/* Any answer's object: the members of every call's answer are read into r. */
static int read_object(walk *w, sr__etcd_reply *r, int nested) {
    const char *key;
    size_t klen;
    int m;
    if (sr__json_object(&w->j) != 0) return -1;
    while ((m = sr__json_member(&w->j, &key, &klen)) > 0) {
        int rc;
        int64_t v = 0;
        if (sr__json_key_is(key, klen, "header")) rc = read_header(w, r, nested);
        else if (sr__json_key_is(key, klen, "result") && !nested) rc = read_object(w, r, 0);
        else if (sr__json_key_is(key, klen, "kvs")) rc = read_kvs(w, r);
        else if (sr__json_key_is(key, klen, "events")) rc = read_events(w, r);
        else if (sr__json_key_is(key, klen, "responses")) rc = read_responses(w, r);
        else if (sr__json_key_is(key, klen, "succeeded") && !nested) rc = sr__json_bool(&w->j, &r->succeeded);
        else if (sr__json_key_is(key, klen, "created")) rc = sr__json_bool(&w->j, &r->created);
        else if (sr__json_key_is(key, klen, "canceled")) rc = sr__json_bool(&w->j, &r->canceled);
        else if (sr__json_key_is(key, klen, "cancel_reason")) rc = read_string_copy(w, &r->cancel_reason);
        else if (sr__json_key_is(key, klen, "deleted")) rc = read_int64(w, &r->deleted);
        else if (sr__json_key_is(key, klen, "ID")) rc = read_int64(w, &r->id);
        else if (sr__json_key_is(key, klen, "TTL")) rc = read_int64(w, &r->ttl);
        else if (sr__json_key_is(key, klen, "compact_revision")) rc = read_int64(w, &r->compact_revision);
        else if (sr__json_key_is(key, klen, "code") && !nested) rc = read_int64(w, &v), r->error_code = (int)v;
        else if (sr__json_key_is(key, klen, "error") && !nested) {
            /* a unary call's error is a string (with "code" beside it), a stream's an object */
            rc = sr__json_peek(&w->j) == SR__JSON_OBJECT ? read_stream_error(w, r) : read_string_copy(w, &r->error);
        } else rc = sr__json_skip(&w->j);
        if (rc != 0) return -1;
    }
    return m;
}

int sr__etcd_reply_parse(const char *text, size_t n, sr__etcd_reply *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    char *arena = sr__malloc(n + 1);
    if (!arena) return sr__fail(err, errlen, "out of memory for an answer of %zu bytes", n);
    walk w = {.oom = NULL};
    sr__json_init(&w.j, text, n, arena);
    int rc = read_object(&w, r, 0);
    if (rc == 0) rc = sr__json_end(&w.j);
    if (rc != 0) {
        size_t at;
        const char *what = sr__json_error(&w.j, &at);
        if (w.oom) sr__fail(err, errlen, "out of memory for %s in an answer of %zu bytes", w.oom, n);
        else
            sr__fail(err, errlen, "not an etcd answer (%s at byte %zu of %zu: \"%.*s\")", what ? what : "?", at, n,
                     (int)(n < 80 ? n : 80), text);
    }
    sr__json_free(&w.j);
    free(arena);
    return rc;
}
