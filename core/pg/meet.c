/* A meeting of a group's ranks through the store in linear traffic (meet.h). */
#define _GNU_SOURCE
#include "pg/meet.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"

/* What the table says when the rank that made it ran out of memory: "oom <rank>". */
#define OOM_TABLE "oom "

static void stage_key(const sr__pg_setup *s, const char *stage, const char *what, char *out, size_t len) {
    snprintf(out, len, "%s%s/%s", s->prefix, stage, what);
}

/* The store's last error, for a call that failed (the client's message: "out of memory for ..."
   when it could not hold a request or a reply).  Holding the store lock. */
static int store_failed(const sr__pg_setup *s, int *who, char *why, size_t whylen) {
    const char *e = s->store_ops->error(s->store);
    snprintf(why, whylen, "%s", e);
    if (!strstr(e, "out of memory")) return SR__MEET_ERROR;
    *who = s->rank;
    return SR__MEET_OOM;
}

/* The last rank to come: every rank's number in one request, joined into the table.  Holding the
   store lock.  Out of memory, the table says so ("oom <rank>"), and every rank fails alike. */
static int make_table(const sr__pg_setup *s, const char *stage, int *who, char *why, size_t whylen) {
    int n = s->size, rc = SR__MEET_OK;
    size_t klen = strlen(s->prefix) + strlen(stage) + 16, at = 0;
    const char **keys = sr__calloc((size_t)n, sizeof *keys);
    char *names = sr__malloc((size_t)n * klen), *table = NULL, all[512], missing[256] = "";
    void **vals = sr__calloc((size_t)n, sizeof *vals);
    size_t *lens = sr__calloc((size_t)n, sizeof *lens);
    int oom = !keys || !names || !vals || !lens;
    stage_key(s, stage, "all", all, sizeof all);
    for (int r = 0; r < n && !oom; r++) {
        char *k = names + (size_t)r * klen;
        snprintf(k, klen, "%s%s/%d", s->prefix, stage, r);
        keys[r] = k;
    }
    if (!oom) {
        /* every rank set its number before counting itself in: all are there, no waiting */
        int got = s->store_ops->fetch(s->store, keys, n, 0, vals, lens, missing, sizeof missing);
        if (got == 1) {
            snprintf(why, whylen, "the store lost numbers of the ranks counted in (%.200s)", missing);
            rc = SR__MEET_ERROR;
        } else if (got != 0) {
            rc = store_failed(s, who, why, whylen);
            oom = rc == SR__MEET_OOM;
        } else {
            size_t total = 1;
            for (int r = 0; r < n; r++) total += lens[r] + 1;
            oom = !(table = sr__malloc(total));
            for (int r = 0; r < n && table; r++) {
                memcpy(table + at, vals[r], lens[r]);
                at += lens[r];
                table[at++] = r + 1 < n ? ' ' : 0;
            }
            if (table && s->store_ops->set(s->store, all, table, at - 1) != 0) rc = store_failed(s, who, why, whylen);
        }
    }
    if (oom) {
        char says[32];
        snprintf(says, sizeof says, OOM_TABLE "%d", s->rank);
        s->store_ops->set(s->store, all, says, strlen(says)); /* if this fails too, the others time out */
        snprintf(why, whylen, "out of memory for the table of %d ranks", n);
        *who = s->rank;
        rc = SR__MEET_OOM;
    }
    for (int r = 0; r < n && vals; r++) free(vals[r]);
    free(vals);
    free(lens);
    free(keys);
    free(names);
    free(table);
    return rc;
}

/* Sets this rank's number, counts it in, and makes the table when it completes the count. */
static int arrive(const sr__pg_setup *s, const char *stage, long long value, int *who, char *why, size_t whylen) {
    char key[512], count[512], v[32];
    snprintf(key, sizeof key, "%s%s/%d", s->prefix, stage, s->rank);
    stage_key(s, stage, "count", count, sizeof count);
    snprintf(v, sizeof v, "%lld", value);
    pthread_mutex_lock(s->store_lock);
    int rc = s->store_ops->set(s->store, key, v, strlen(v)) == 0 ? SR__MEET_OK : SR__MEET_ERROR;
    long long n = rc == SR__MEET_OK ? s->store_ops->add(s->store, count, 1) : -1;
    if (n < 0) rc = store_failed(s, who, why, whylen);
    else if (n == s->size) rc = make_table(s, stage, who, why, whylen);
    pthread_mutex_unlock(s->store_lock);
    return rc;
}

/* After a timeout: the ranks whose own keys are missing, checked once without waiting, as "2, 5".
   Holding the store lock. */
static void name_missing(const sr__pg_setup *s, const char *stage, char *out, size_t len) {
    int n = s->size, ok = 1;
    const char **keys = sr__calloc((size_t)n, sizeof *keys);
    char **owned = sr__calloc((size_t)n, sizeof *owned), missing[4096] = "";
    ok = keys && owned;
    for (int r = 0; r < n && ok; r++) ok = (keys[r] = owned[r] = sr__fmt("%s%s/%d", s->prefix, stage, r)) != NULL;
    int rc = ok ? s->store_ops->wait(s->store, keys, n, 0, missing, sizeof missing) : -1;
    for (int r = 0; r < n && owned; r++) free(owned[r]);
    free(owned);
    free(keys);
    if (!ok) snprintf(out, len, "(out of memory to name them)");
    else if (rc == 0) snprintf(out, len, "(none: the last came just now)");
    else if (rc != 1) snprintf(out, len, "(unknown: %s)", s->store_ops->error(s->store));
    else {
        /* "pg/world/shm/pid/2,pg/world/shm/pid/5" -> "2, 5" */
        size_t used = 0;
        out[0] = 0;
        for (char *tok = strtok(missing, ","); tok && used < len; tok = strtok(NULL, ",")) {
            const char *slash = strrchr(tok, '/');
            used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ", " : "", slash ? slash + 1 : tok);
        }
    }
}

/* The table: n numbers, or "oom <rank>". */
static int parse_table(const sr__pg_setup *s, const char *table, size_t len, long long *vals, int *who, char *why,
                       size_t whylen) {
    if (!strncmp(table, OOM_TABLE, strlen(OOM_TABLE))) {
        *who = atoi(table + strlen(OOM_TABLE));
        snprintf(why, whylen, "rank %d ran out of memory for the table of %d ranks", *who, s->size);
        return SR__MEET_OOM;
    }
    const char *p = table;
    for (int r = 0; r < s->size; r++) {
        char *end;
        errno = 0;
        vals[r] = strtoll(p, &end, 10);
        if (end == p || errno) {
            snprintf(why, whylen, "the store's table of %d ranks is cut short at rank %d (%zu bytes)", s->size, r, len);
            return SR__MEET_ERROR;
        }
        p = end;
    }
    if (*p) {
        snprintf(why, whylen, "the store's table of %d ranks holds more than %d numbers", s->size, s->size);
        return SR__MEET_ERROR;
    }
    return SR__MEET_OK;
}

int sr__pg_meet(const sr__pg_setup *s, const char *stage, long long value, long long *vals, int *who, char *why,
                size_t whylen) {
    why[0] = 0;
    *who = -1;
    int rc = arrive(s, stage, value, who, why, whylen);
    if (rc != SR__MEET_OK) return rc;
    char all[512], missing[256] = "";
    stage_key(s, stage, "all", all, sizeof all);
    const char *key = all;
    void *table = NULL;
    size_t len = 0;
    pthread_mutex_lock(s->store_lock);
    int got = s->store_ops->fetch(s->store, &key, 1, s->timeout_s, &table, &len, missing, sizeof missing);
    if (got == 1) name_missing(s, stage, why, whylen);
    else if (got != 0) rc = store_failed(s, who, why, whylen);
    pthread_mutex_unlock(s->store_lock);
    if (got == 1) return SR__MEET_LATE;
    if (got == 0) rc = parse_table(s, table, len, vals, who, why, whylen);
    free(table);
    return rc;
}

void sr__pg_meet_say(const sr__pg_setup *s, const char *stage, long long value) {
    char why[256];
    int who;
    (void)arrive(s, stage, value, &who, why, sizeof why);
}
