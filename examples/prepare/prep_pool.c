/* The tokenizing pool (prep_pool.h): a ring of chunks, each EMPTY -> FILLED (main thread) ->
   WORKING -> DONE (a worker) -> EMPTY again (main thread, in submission order).  One mutex and two
   condition variables: workers wait for FILLED chunks, the main thread for the oldest one DONE. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prep_pool.h"

enum { SLOT_EMPTY, SLOT_FILLED, SLOT_WORKING, SLOT_DONE };

struct prep_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    prep_chunk *chunk;
    int *state;
    size_t nslot;
    size_t fill, take, next_work; /* counters; slot = counter % nslot */
    int stopping;
    int nthreads, started;
    pthread_t *thread;
    tf_tokenizer **tok;
    prep_tokenizer_files files;
};

int prep_chunk_add(prep_chunk *c, const char *text, size_t len, int eot_first) {
    if (c->len + len > c->cap) {
        size_t cap = c->cap ? c->cap : 1 << 16;
        while (cap < c->len + len) cap *= 2;
        char *t = realloc(c->text, cap);
        if (!t) return -1;
        c->text = t, c->cap = cap;
    }
    if (c->nseg == c->seg_cap) {
        size_t cap = c->seg_cap ? 2 * c->seg_cap : 64;
        prep_seg *s = realloc(c->seg, cap * sizeof *s);
        if (!s) return -1;
        c->seg = s, c->seg_cap = cap;
    }
    if (len) memcpy(c->text + c->len, text, len); /* an empty document: c->text may still be NULL */
    c->seg[c->nseg++] = (prep_seg){c->len, len, eot_first};
    c->len += len;
    return 0;
}

tf_tokenizer *prep_tokenizer_load(const prep_tokenizer_files *f, char *err, size_t errlen) {
    if (f->tokenizer_json) return tf_tokenizer_load_json(f->tokenizer_json, err, errlen);
    return tf_tokenizer_load(f->vocab_json, f->merges_txt, err, errlen);
}

static void encode_chunk(tf_tokenizer *t, prep_chunk *c) {
    c->nids = 0;
    c->failed = 0;
    int32_t eot = tf_tokenizer_eos(t);
    for (size_t i = 0; i < c->nseg && !c->failed; i++) {
        const prep_seg *s = &c->seg[i];
        if (s->eot_first) {
            if (c->nids == c->ids_cap) {
                size_t cap = c->ids_cap ? 2 * c->ids_cap : 1 << 14;
                int32_t *ids = realloc(c->ids, cap * sizeof *ids);
                if (!ids) {
                    c->failed = 1;
                    break;
                }
                c->ids = ids, c->ids_cap = cap;
            }
            c->ids[c->nids++] = eot;
        }
        if (tf_tokenizer_encode(t, c->text + s->off, s->len, &c->ids, &c->nids, &c->ids_cap)) c->failed = 1;
    }
}

typedef struct {
    prep_pool *p;
    int k;
} worker_arg;

static void *worker(void *arg) {
    prep_pool *p = ((worker_arg *)arg)->p;
    int k = ((worker_arg *)arg)->k;
    free(arg);
    /* thread 0's tokenizer was loaded (and the files checked) before the threads started; the
       others load theirs here, at the same time (GPT-2's takes tenths of a second each) */
    char err[512];
    if (!p->tok[k]) p->tok[k] = prep_tokenizer_load(&p->files, err, sizeof err);
    tf_tokenizer *t = p->tok[k];
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && p->next_work == p->fill) pthread_cond_wait(&p->work, &p->mu);
        if (p->next_work == p->fill) break; /* stopping, and nothing left */
        size_t s = p->next_work++ % p->nslot;
        p->state[s] = SLOT_WORKING;
        pthread_mutex_unlock(&p->mu);
        if (t) encode_chunk(t, &p->chunk[s]);
        else p->chunk[s].failed = 1; /* no tokenizer: out of memory, or the files changed meanwhile */
        pthread_mutex_lock(&p->mu);
        p->state[s] = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

prep_pool *prep_pool_start(const prep_tokenizer_files *f, int nthreads, char *err, size_t errlen) {
    prep_pool *p = calloc(1, sizeof *p);
    if (!p) return snprintf(err, errlen, "out of memory"), NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->nthreads = nthreads;
    p->nslot = 4 * (size_t)nthreads;
    p->chunk = calloc(p->nslot, sizeof *p->chunk);
    p->state = calloc(p->nslot, sizeof *p->state);
    p->thread = calloc((size_t)nthreads, sizeof *p->thread);
    p->tok = calloc((size_t)nthreads, sizeof *p->tok);
    if (!p->chunk || !p->state || !p->thread || !p->tok) {
        snprintf(err, errlen, "out of memory");
        prep_pool_stop(p);
        return NULL;
    }
    /* the first tokenizer before any thread starts: a bad tokenizer file is reported once, and
       before any input is read */
    p->files = *f;
    if (!(p->tok[0] = prep_tokenizer_load(f, err, errlen))) {
        prep_pool_stop(p);
        return NULL;
    }
    for (int k = 0; k < nthreads; k++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) *a = (worker_arg){p, k};
        if (!a || pthread_create(&p->thread[k], NULL, worker, a)) {
            free(a);
            snprintf(err, errlen, "cannot start tokenizing thread %d of %d", k + 1, nthreads);
            prep_pool_stop(p);
            return NULL;
        }
        p->started++;
    }
    return p;
}

int prep_pool_vocab_size(const prep_pool *p) { return tf_tokenizer_vocab_size(p->tok[0]); }

prep_chunk *prep_pool_free_slot(prep_pool *p) {
    if (p->fill - p->take == p->nslot) return NULL;
    prep_chunk *c = &p->chunk[p->fill % p->nslot];
    c->len = c->nseg = c->nids = 0;
    return c;
}

void prep_pool_submit(prep_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->state[p->fill % p->nslot] = SLOT_FILLED;
    p->fill++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

prep_chunk *prep_pool_next_done(prep_pool *p) {
    if (p->take == p->fill) return NULL;
    size_t s = p->take % p->nslot;
    pthread_mutex_lock(&p->mu);
    while (p->state[s] != SLOT_DONE) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return &p->chunk[s];
}

void prep_pool_release(prep_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->state[p->take % p->nslot] = SLOT_EMPTY;
    p->take++;
    pthread_mutex_unlock(&p->mu);
}

void prep_pool_stop(prep_pool *p) {
    if (!p) return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->mu);
        for (int k = 0; k < p->started; k++) pthread_join(p->thread[k], NULL);
    }
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    for (size_t i = 0; p->chunk && i < p->nslot; i++)
        free(p->chunk[i].text), free(p->chunk[i].seg), free(p->chunk[i].ids);
    for (int k = 0; p->tok && k < p->nthreads; k++) tf_tokenizer_free(p->tok[k]);
    free(p->chunk), free(p->state), free(p->thread), free(p->tok);
    free(p);
}
