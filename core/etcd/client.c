/* The client (etcd.h): the member list, and requests that move on to the next member. */
#define _POSIX_C_SOURCE 200809L
#include "etcd/client.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/fail.h"

CURL *sr__etcd_curl_new(const sr__etcd_opts *opts) {
    CURL *e = sr__curl_loaded()->easy_init();
    if (!e) return NULL;
    sr__curl_loaded()->easy_setopt(e, CURLOPT_NOSIGNAL, 1L); /* timeouts without SIGALRM: any thread may call */
    sr__curl_loaded()->easy_setopt(e, CURLOPT_NOPROXY, "*"); /* an http_proxy of the user's is not for the members */
    sr__curl_loaded()->easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http");
    sr__curl_loaded()->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)opts->connect_timeout_ms);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
    return e;
}

void sr__etcd_close(sr__etcd *c) {
    if (!c) return;
    if (c->easy) sr__curl_loaded()->easy_cleanup(c->easy);
    sr__curl_loaded()->slist_free_all(c->headers);
    for (size_t i = 0; i < c->n; i++) free(c->urls[i]);
    free(c->urls);
    free(c->why);
    free(c->spec);
    sr__buf_free(&c->in);
    free(c);
}

/* One entry of the list: "host:port" or "http://host:port", host a name, an IPv4 address or a
   bracketed IPv6 one.  The URL, or NULL with err. */
static char *entry_url(const char *spec, const char *s, size_t len, int nth, char *err, size_t errlen) {
    const char *scheme = "http://";
    if (len >= 8 && !strncmp(s, "https://", 8)) {
        sr__fail(err, errlen,
                 "etcd endpoint list \"%s\": entry %d \"%.*s\": TLS (https) is not supported yet; give "
                 "the members' plain http client URLs",
                 spec, nth, (int)len, s);
        return NULL;
    }
    if (len >= 7 && !strncmp(s, scheme, 7)) s += 7, len -= 7;
    const char *colon = NULL;
    for (size_t i = 0; i < len; i++)
        if (s[i] == ':') colon = s + i;
    size_t hostlen = colon ? (size_t)(colon - s) : 0;
    size_t portlen = colon ? len - hostlen - 1 : 0;
    int port_ok = portlen > 0 && portlen <= 5;
    long port = 0;
    for (size_t i = 0; port_ok && i < portlen; i++) {
        if (colon[1 + i] < '0' || colon[1 + i] > '9') port_ok = 0;
        else port = port * 10 + (colon[1 + i] - '0');
    }
    int host_ok = hostlen > 0 && (s[0] != '[' || s[hostlen - 1] == ']');
    for (size_t i = 0; host_ok && i < hostlen; i++)
        if (s[i] == '/' || s[i] == ' ' || s[i] == '@' || s[i] == '?' || s[i] == '#') host_ok = 0;
    if (!host_ok || !port_ok || port < 1 || port > 65535) {
        sr__fail(err, errlen,
                 "etcd endpoint list \"%s\": entry %d \"%.*s\" is not host:port (e.g. 10.0.0.1:2379 "
                 "or etcd1:2379; members separated by commas)",
                 spec, nth, (int)len, s);
        return NULL;
    }
    char *url = sr__fmt("http://%.*s", (int)len, s);
    if (!url) sr__fail(err, errlen, "out of memory for the etcd endpoint \"%.*s\"", (int)len, s);
    return url;
}

static int opt_or(int v, int dflt) { return v > 0 ? v : dflt; }

sr__etcd *sr__etcd_open(const char *endpoints, const sr__etcd_opts *opts, char *err, size_t errlen) {
    if (!sr__curl(err, errlen)) return NULL; /* libcurl, loaded at the first client */
    sr__etcd *c = sr__calloc(1, sizeof *c);
    if (!c) return sr__fail(err, errlen, "out of memory for an etcd client (%zu bytes)", sizeof *c), NULL;
    sr__etcd_opts o = opts ? *opts : (sr__etcd_opts){0};
    c->opts.connect_timeout_ms = opt_or(o.connect_timeout_ms, 1000);
    c->opts.attempt_timeout_ms = opt_or(o.attempt_timeout_ms, 3000);
    c->opts.op_timeout_ms = opt_or(o.op_timeout_ms, 10000);
    c->opts.watch_probe_ms = opt_or(o.watch_probe_ms, 5000);
    if (!(c->spec = sr__strdup(endpoints ? endpoints : ""))) {
        sr__fail(err, errlen, "out of memory for the etcd endpoint list");
        goto fail;
    }
    size_t cap = 0;
    int nth = 0;
    for (const char *s = c->spec;; nth++) {
        const char *end = strchr(s, ',');
        size_t len = end ? (size_t)(end - s) : strlen(s);
        while (len && *s == ' ') s++, len--; /* "a:1, b:2" */
        while (len && s[len - 1] == ' ') len--;
        if (!len) {
            sr__fail(err, errlen, "etcd endpoint list \"%s\": entry %d is empty; expected host:port[,host:port...]",
                     c->spec, nth + 1);
            goto fail;
        }
        if (sr__grow((void **)&c->urls, &cap, c->n + 1, sizeof *c->urls) != 0) {
            sr__fail(err, errlen, "out of memory for the etcd endpoint list");
            goto fail;
        }
        if (!(c->urls[c->n] = entry_url(c->spec, s, len, nth + 1, err, errlen))) goto fail;
        c->n++;
        if (!end) break;
        s = end + 1;
    }
    if (!(c->why = sr__calloc(c->n, sizeof *c->why))) {
        sr__fail(err, errlen, "out of memory for the etcd endpoint list");
        goto fail;
    }
    c->easy = sr__etcd_curl_new(&c->opts);
    c->headers = sr__curl_loaded()->slist_append(NULL, "Content-Type: application/json");
    if (!c->easy || !c->headers) {
        sr__fail(err, errlen, "out of memory for an etcd client's connection (libcurl)");
        goto fail;
    }
    return c;
fail:
    sr__etcd_close(c);
    return NULL;
}

const char *sr__etcd_endpoint(const sr__etcd *c) { return c->urls[c->cur]; }

static size_t on_data(char *p, size_t size, size_t nmemb, void *ud) {
    sr__etcd *c = ud;
    size_t n = size * nmemb;
    if (n > SR__ETCD_MAX_ANSWER - c->in.n) {
        c->in_too_big = 1;
        return 0; /* ends the transfer */
    }
    sr__buf_add(&c->in, p, n);
    return c->in.oom ? 0 : n;
}

int sr__etcd_post(sr__etcd *c, size_t m, const char *path, const char *body, int timeout_ms, sr__etcd_reply *r,
                  char *why, size_t whylen) {
    memset(r, 0, sizeof *r);
    char url[512], curl_err[CURL_ERROR_SIZE] = "";
    snprintf(url, sizeof url, "%s%s", c->urls[m], path);
    c->in.n = 0;
    c->in.oom = 0;
    c->in_too_big = 0;
    CURL *e = c->easy;
    sr__curl_loaded()->easy_setopt(e, CURLOPT_URL, url);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_HTTPHEADER, c->headers);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_POSTFIELDS, body);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
    sr__curl_loaded()->easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_WRITEDATA, c);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_ERRORBUFFER, curl_err);
    int connect_ms = c->opts.connect_timeout_ms < timeout_ms ? c->opts.connect_timeout_ms : timeout_ms;
    sr__curl_loaded()->easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)connect_ms);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    CURLcode rc = sr__curl_loaded()->easy_perform(e);
    sr__curl_loaded()->easy_setopt(e, CURLOPT_ERRORBUFFER, NULL);
    if (c->in.oom) return sr__fail(why, whylen, "out of memory for its answer (%zu bytes so far)", c->in.n);
    if (c->in_too_big) return sr__fail(why, whylen, "its answer passed %zu MiB", SR__ETCD_MAX_ANSWER >> 20);
    if (rc == CURLE_OPERATION_TIMEDOUT)
        return sr__fail(why, whylen, "no answer within %d ms (%s)", timeout_ms, curl_err[0] ? curl_err : "timeout");
    if (rc != CURLE_OK)
        return sr__fail(why, whylen, "%s (%s)", sr__curl_loaded()->easy_strerror(rc),
                        curl_err[0] ? curl_err : "no details");
    long status = 0;
    sr__curl_loaded()->easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    const char *text = c->in.s ? c->in.s : "";
    char perr[300];
    if (sr__etcd_reply_parse(text, c->in.n, r, perr, sizeof perr) != 0) {
        sr__etcd_reply_free(r);
        if (status == 200) return sr__fail(why, whylen, "HTTP 200 with %s", perr);
        /* no etcd error either: the gateway's own answer (a path it does not serve: 404) */
        r->error_code = -(int)status;
        if (!(r->error = sr__fmt("HTTP %ld: %.*s", status, (int)(c->in.n < 200 ? c->in.n : 200), text)))
            return sr__fail(why, whylen, "out of memory for its error message");
        return 0;
    }
    if (status != 200 && !r->error) {
        r->error_code = -(int)status;
        if (!(r->error = sr__fmt("HTTP %ld: %.*s", status, (int)(c->in.n < 200 ? c->in.n : 200), text)))
            return sr__fail(why, whylen, "out of memory for its error message");
    }
    return 0;
}

/* etcd's answers that say "this member cannot serve now; another may" */
static int unavailable(int code) {
    return code == SR__GRPC_UNAVAILABLE || code == SR__GRPC_DEADLINE || code == SR__GRPC_EXHAUSTED;
}

static void sleep_ms(double ms) {
    if (ms <= 0) return;
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (double)(time_t)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

int sr__etcd_call(sr__etcd *c, const char *op, const char *path, const char *body, sr__etcd_reply *r, char *err,
                  size_t errlen) {
    double start = sr__now_s(), deadline = start + c->opts.op_timeout_ms / 1000.0;
    for (size_t m = 0; m < c->n; m++) c->why[m][0] = 0;
    int attempts = 0;
    memset(r, 0, sizeof *r);
    for (;;) {
        double left_ms = (deadline - sr__now_s()) * 1000;
        if (left_ms < 1) break;
        int timeout = c->opts.attempt_timeout_ms < left_ms ? c->opts.attempt_timeout_ms : (int)left_ms;
        size_t m = c->cur;
        attempts++;
        if (sr__etcd_post(c, m, path, body, timeout, r, c->why[m], sizeof c->why[m]) == 0) {
            if (!r->error) return 0;
            if (!unavailable(r->error_code))
                return sr__fail(err, errlen, "etcd at %s: %s: %s (gRPC code %d)", c->urls[m], op, r->error,
                                r->error_code);
            snprintf(c->why[m], sizeof c->why[m], "etcd says: %s", r->error);
            sr__etcd_reply_free(r);
        }
        c->cur = (m + 1) % c->n;
        /* after each round of the members, a pause that grows (an election takes about a second) */
        if (attempts % (int)c->n == 0) {
            double pause = 50.0 * (attempts / (int)c->n);
            double left = (deadline - sr__now_s()) * 1000;
            sleep_ms(pause < left ? pause : left);
        }
    }
    sr__buf msg = {0};
    for (size_t m = 0; m < c->n; m++)
        if (c->why[m][0]) sr__buf_printf(&msg, "; %s: %s", c->urls[m], c->why[m]);
    sr__fail(err, errlen, "etcd %s: no member answered within %d ms (%d requests to %zu members%s)", op,
             c->opts.op_timeout_ms, attempts, c->n, msg.s && !msg.oom ? msg.s : "");
    sr__buf_free(&msg);
    return -1;
}
