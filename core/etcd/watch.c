/*
 * Watches (etcd.h): one streamed POST to /v3/watch at a time, read through libcurl's multi
 * interface so that sr__etcd_watch_next waits no longer than its caller allows.  The stream's
 * messages are lines of JSON: first {"created": true}, then {"events": [...]} in revision order.
 * The watch remembers the revision after the last event it queued; when its member goes (the
 * stream ends, no "created" within attempt_timeout_ms, silence the probe finds is a dead member,
 * etcd cancels the watch for want of a leader), the next stream starts on the next member from
 * that revision: nothing twice, nothing missed.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"
#include "etcd/client.h"
#include "etcd/request.h"

struct sr__etcd_watch {
    sr__etcd *c; /* a client of its own over the same members: their list, the probe's requests */
    char *prefix;
    int64_t next_rev; /* where a stream starts: after the last event queued (0: now, until "created") */
    CURLM *multi;
    CURL *easy; /* the stream, or NULL between streams */
    struct curl_slist *headers;
    sr__buf body; /* the running stream's create request */
    sr__buf in;   /* what it sent, from in_used on not read yet */
    size_t in_used;
    int in_too_big;
    int created;               /* the running stream was accepted */
    double started, last_data; /* when the stream started, when it last sent anything */
    double lost_since;         /* when the watch last had no accepted stream (0: it has one) */
    double retry_at;           /* no new stream before this */
    int attempts;              /* streams started since the last one accepted */
    sr__etcd_event *queue;     /* events read, not yet delivered: queue[qhead .. qn) */
    size_t qhead, qn, qcap;
    sr__etcd_event delivered; /* the last one returned, freed at the next call */
    int ended;
    char end_msg[1024];
    int64_t compacted;
};

static void stop_stream(sr__etcd_watch *w) {
    if (!w->easy) return;
    sr__curl_loaded()->multi_remove_handle(w->multi, w->easy);
    sr__curl_loaded()->easy_cleanup(w->easy);
    w->easy = NULL;
}

/* Ends the watch: every later call fails with this message. */
__attribute__((format(printf, 2, 3))) static void end_watch(sr__etcd_watch *w, const char *fmt, ...) {
    if (w->ended) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->end_msg, sizeof w->end_msg, fmt, ap);
    va_end(ap);
    w->ended = 1;
    stop_stream(w);
}

/* The stream's member failed it: try the next member, pausing after each round of them, until one
   accepts a stream or op_timeout_ms has passed since the watch last had one. */
__attribute__((format(printf, 2, 3))) static void member_failed(sr__etcd_watch *w, const char *fmt, ...) {
    sr__etcd *c = w->c;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why[c->cur], sizeof c->why[c->cur], fmt, ap);
    va_end(ap);
    stop_stream(w);
    double now = sr__now_s();
    if (!w->lost_since) w->lost_since = now;
    c->cur = (c->cur + 1) % c->n;
    w->attempts++;
    if (w->attempts % (int)c->n == 0) w->retry_at = now + 0.05 * (w->attempts / (int)c->n);
    if ((now - w->lost_since) * 1000 >= c->opts.op_timeout_ms) {
        sr__buf msg = {0};
        for (size_t m = 0; m < c->n; m++)
            if (c->why[m][0]) sr__buf_printf(&msg, "; %s: %s", c->urls[m], c->why[m]);
        end_watch(w,
                  "etcd watch of the prefix \"%.120s\" (from revision %" PRId64 "): no member served it within %d "
                  "ms (%d attempts%s)",
                  w->prefix, w->next_rev, c->opts.op_timeout_ms, w->attempts, msg.s && !msg.oom ? msg.s : "");
        sr__buf_free(&msg);
    }
}

static size_t on_stream(char *p, size_t size, size_t nmemb, void *ud) {
    sr__etcd_watch *w = ud;
    size_t n = size * nmemb;
    if (n > SR__ETCD_MAX_ANSWER - (w->in.n - w->in_used)) {
        w->in_too_big = 1;
        return 0;
    }
    sr__buf_add(&w->in, p, n);
    return w->in.oom ? 0 : n;
}

static void start_stream(sr__etcd_watch *w) {
    sr__etcd *c = w->c;
    w->body.n = 0;
    if (w->body.s) w->body.s[0] = 0;
    SR__ETCD_ADD(&w->body, "{\"create_request\":{");
    sr__etcd_add_key(&w->body, w->prefix, 1);
    if (w->next_rev) sr__etcd_add_int64(&w->body, "start_revision", w->next_rev);
    SR__ETCD_ADD(&w->body, "}}");
    char url[512];
    snprintf(url, sizeof url, "%s/v3/watch", c->urls[c->cur]);
    if (w->body.oom || !(w->easy = sr__etcd_curl_new(&c->opts))) {
        end_watch(w, "etcd watch of the prefix \"%.120s\": out of memory for its request", w->prefix);
        return;
    }
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_URL, url);
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_HTTPHEADER, w->headers);
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_POSTFIELDS, w->body.s);
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_POSTFIELDSIZE, (long)w->body.n);
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_WRITEFUNCTION, on_stream);
    sr__curl_loaded()->easy_setopt(w->easy, CURLOPT_WRITEDATA, w);
    if (sr__curl_loaded()->multi_add_handle(w->multi, w->easy) != CURLM_OK) {
        sr__curl_loaded()->easy_cleanup(w->easy);
        w->easy = NULL;
        end_watch(w, "etcd watch of the prefix \"%.120s\": libcurl refused the stream", w->prefix);
        return;
    }
    w->in.n = w->in_used = 0;
    w->in_too_big = 0;
    w->created = 0;
    w->started = w->last_data = sr__now_s();
}

/* Moves a message's events to the queue: those from next_rev on (a resumed stream starts there;
   one revision's events, a transaction's, come in one message). */
static int queue_events(sr__etcd_watch *w, sr__etcd_reply *r) {
    int64_t floor = w->next_rev;
    for (size_t i = 0; i < r->nevents; i++) {
        sr__etcd_event *ev = &r->events[i];
        if (ev->kv.mod_revision < floor) continue; /* freed with r */
        if (sr__grow((void **)&w->queue, &w->qcap, w->qn + 1, sizeof *w->queue) != 0) return -1;
        w->queue[w->qn++] = *ev;
        memset(ev, 0, sizeof *ev);
        if (w->queue[w->qn - 1].kv.mod_revision >= w->next_rev) w->next_rev = w->queue[w->qn - 1].kv.mod_revision + 1;
    }
    return 0;
}

/* One message of the stream. */
static void read_message(sr__etcd_watch *w, const char *line, size_t n) {
    sr__etcd *c = w->c;
    sr__etcd_reply r;
    char perr[300];
    w->last_data = sr__now_s();
    if (sr__etcd_reply_parse(line, n, &r, perr, sizeof perr) != 0) {
        member_failed(w, "its watch stream sent %s", perr);
    } else if (r.error) {
        if (r.error_code == SR__GRPC_UNAVAILABLE || r.error_code == SR__GRPC_DEADLINE)
            member_failed(w, "etcd says: %s", r.error);
        else
            end_watch(w, "etcd at %s: watch of the prefix \"%.120s\" from revision %" PRId64 ": %s (gRPC code %d)",
                      c->urls[c->cur], w->prefix, w->next_rev, r.error, r.error_code);
    } else if (r.canceled && r.compact_revision > 0) {
        w->compacted = r.compact_revision;
        end_watch(w,
                  "etcd at %s: watch of the prefix \"%.120s\" from revision %" PRId64 ": etcd has compacted its "
                  "history up to revision %" PRId64 "; read the keys again and watch from that read's revision + 1",
                  c->urls[c->cur], w->prefix, w->next_rev, r.compact_revision);
    } else if (r.canceled) {
        /* "etcdserver: no leader" (the stream asked for a member with a leader): another may serve it */
        member_failed(w, "etcd canceled the watch: %s", r.cancel_reason ? r.cancel_reason : "no reason given");
    } else {
        if (r.created && !w->created) {
            w->created = 1;
            w->lost_since = 0;
            w->attempts = 0;
            if (!w->next_rev) w->next_rev = r.revision + 1;
        }
        if (queue_events(w, &r) != 0)
            end_watch(w, "etcd watch of the prefix \"%.120s\": out of memory for %zu events", w->prefix, w->qn + 1);
    }
    sr__etcd_reply_free(&r);
}

/* The stream's complete lines, read. */
static void read_lines(sr__etcd_watch *w) {
    while (w->easy && !w->ended && w->in_used < w->in.n) {
        char *start = w->in.s + w->in_used, *nl = memchr(start, '\n', w->in.n - w->in_used);
        if (!nl) break;
        w->in_used += (size_t)(nl - start) + 1;
        if (nl > start) read_message(w, start, (size_t)(nl - start));
    }
    if (w->in_used == w->in.n) w->in.n = w->in_used = 0;
}

/* A silent stream: is its member still serving?  A read that needs a quorum says. */
static void probe(sr__etcd_watch *w) {
    sr__etcd *c = w->c;
    sr__buf b = {0};
    SR__ETCD_ADD(&b, "{");
    sr__etcd_add_key(&b, w->prefix, 0);
    SR__ETCD_ADD(&b, ",\"count_only\":true}");
    if (b.oom) {
        sr__buf_free(&b);
        end_watch(w, "etcd watch of the prefix \"%.120s\": out of memory for its probe", w->prefix);
        return;
    }
    sr__etcd_reply r;
    char why[200];
    int rc = sr__etcd_post(c, c->cur, "/v3/kv/range", b.s, c->opts.attempt_timeout_ms, &r, why, sizeof why);
    sr__buf_free(&b);
    if (rc != 0) member_failed(w, "its watch stream was silent for %d ms, and a read: %s", c->opts.watch_probe_ms, why);
    else if (r.error)
        member_failed(w, "its watch stream was silent for %d ms, and a read: etcd says: %s", c->opts.watch_probe_ms,
                      r.error);
    else w->last_data = sr__now_s();
    sr__etcd_reply_free(&r);
}

/* One turn: starts a stream when there is none, reads what came, notices a lost member. */
static void pump(sr__etcd_watch *w) {
    double now = sr__now_s();
    if (!w->easy && now >= w->retry_at) start_stream(w);
    if (!w->easy) return;
    int running = 0;
    sr__curl_loaded()->multi_perform(w->multi, &running);
    if (w->in.oom) {
        end_watch(w, "etcd watch of the prefix \"%.120s\": out of memory for its stream (%zu bytes)", w->prefix,
                  w->in.n);
        return;
    }
    read_lines(w);
    int left;
    CURLMsg *m;
    while (w->easy && (m = sr__curl_loaded()->multi_info_read(w->multi, &left)))
        if (m->msg == CURLMSG_DONE && m->easy_handle == w->easy) {
            CURLcode rc = m->data.result;
            if (w->in_too_big)
                member_failed(w, "its watch stream sent a message over %zu MiB", SR__ETCD_MAX_ANSWER >> 20);
            else
                member_failed(w, "its watch stream ended (%s)",
                              rc == CURLE_OK ? "closed" : sr__curl_loaded()->easy_strerror(rc));
        }
    now = sr__now_s();
    const sr__etcd_opts *o = &w->c->opts;
    if (w->easy && !w->created && (now - w->started) * 1000 >= o->attempt_timeout_ms)
        member_failed(w, "no answer to a watch within %d ms", o->attempt_timeout_ms);
    else if (w->easy && !w->created && (now - w->lost_since) * 1000 >= o->op_timeout_ms)
        member_failed(w, "no answer to a watch within %d ms", (int)((now - w->started) * 1000)); /* ends it */
    else if (w->easy && w->created && (now - w->last_data) * 1000 >= o->watch_probe_ms) probe(w);
}

static void free_event(sr__etcd_event *ev) {
    sr__etcd_kv_free(&ev->kv);
    ev->type = 0;
}

int sr__etcd_watch_next(sr__etcd_watch *w, int timeout_ms, sr__etcd_event *ev, char *err, size_t errlen) {
    free_event(&w->delivered);
    double deadline = sr__now_s() + timeout_ms / 1000.0;
    for (;;) {
        if (w->qhead < w->qn) {
            w->delivered = *ev = w->queue[w->qhead++];
            if (w->qhead == w->qn) w->qhead = w->qn = 0;
            return 1;
        }
        if (w->ended) return sr__fail(err, errlen, "%s", w->end_msg);
        pump(w);
        if (w->qhead < w->qn || w->ended) continue;
        double left_ms = (deadline - sr__now_s()) * 1000;
        if (left_ms <= 0) return 0;
        /* woken by the stream's data, or at least every 100 ms for the timeouts above */
        double wait = left_ms < 100 ? left_ms : 100;
        if (!w->easy) {
            double until_retry = (w->retry_at - sr__now_s()) * 1000;
            if (until_retry < wait) wait = until_retry > 0 ? until_retry : 0;
        }
        sr__curl_loaded()->multi_poll(w->multi, NULL, 0, (int)wait, NULL);
    }
}

int64_t sr__etcd_watch_compacted(const sr__etcd_watch *w) { return w->compacted; }

const char *sr__etcd_watch_endpoint(const sr__etcd_watch *w) { return sr__etcd_endpoint(w->c); }

void sr__etcd_watch_close(sr__etcd_watch *w) {
    if (!w) return;
    stop_stream(w);
    if (w->multi) sr__curl_loaded()->multi_cleanup(w->multi);
    sr__curl_loaded()->slist_free_all(w->headers);
    free_event(&w->delivered);
    for (size_t i = w->qhead; i < w->qn; i++) free_event(&w->queue[i]);
    free(w->queue);
    sr__buf_free(&w->body);
    sr__buf_free(&w->in);
    free(w->prefix);
    sr__etcd_close(w->c);
    free(w);
}

sr__etcd_watch *sr__etcd_watch_open(sr__etcd *c, const char *prefix, int64_t start_revision, char *err, size_t errlen) {
    sr__etcd_watch *w = sr__calloc(1, sizeof *w);
    if (!w) return sr__fail(err, errlen, "out of memory for an etcd watch (%zu bytes)", sizeof *w), NULL;
    if (!(w->c = sr__etcd_open(c->spec, &c->opts, err, errlen))) goto fail;
    w->c->cur = c->cur;
    w->next_rev = start_revision;
    w->prefix = sr__strdup(prefix);
    w->multi = sr__curl_loaded()->multi_init();
    w->headers = sr__curl_loaded()->slist_append(NULL, "Content-Type: application/json");
    /* gRPC metadata through the gateway: a member that loses its leader cancels the watch (then
       the watch moves on) instead of keeping it open and silent */
    struct curl_slist *h =
        w->headers ? sr__curl_loaded()->slist_append(w->headers, "Grpc-Metadata-hasleader: true") : NULL;
    if (!w->prefix || !w->multi || !h) {
        sr__fail(err, errlen, "out of memory for an etcd watch of the prefix \"%.120s\"", prefix);
        goto fail;
    }
    w->headers = h;
    w->lost_since = sr__now_s(); /* no stream yet: op_timeout_ms to find a member */
    /* connected when a member has accepted it: its events from start_revision on are then kept */
    while (!w->created && !w->ended) {
        pump(w);
        if (!w->created && !w->ended) sr__curl_loaded()->multi_poll(w->multi, NULL, 0, 50, NULL);
    }
    if (w->ended && !w->compacted) { /* compaction: the caller hears it from sr__etcd_watch_next */
        sr__fail(err, errlen, "%s", w->end_msg);
        goto fail;
    }
    return w;
fail:
    sr__etcd_watch_close(w);
    return NULL;
}
