/* The prepare command's pool (prep_pool.h): a ring of jobs, each EMPTY -> FILLED (main thread) ->
   WORKING -> DONE (a worker) -> EMPTY again (main thread, in submission order).  One mutex and two
   condition variables: workers wait for FILLED jobs, the main thread for the oldest one DONE. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardrun/data.h"

#include "prep_pool.h"

enum { SLOT_EMPTY, SLOT_FILLED, SLOT_WORKING, SLOT_DONE };

struct prep_pool {
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    prep_job *job;
    int *state;
    size_t nslot;
    size_t fill, take, next_work; /* counters; slot = counter % nslot */
    int stopping;
    int nthreads, started;
    pthread_t *thread;
    tf_tokenizer *base; /* loaded: its tables and cache are shared by the threads' clones */
    tf_tokenizer **tok; /* thread k's clone of base (one thread too: the same code at every count) */
    const char *text_field;
    int token_bytes;
    double cpu_s; /* the threads' CPU seconds, added by each as it ends (under mu) */
};

tf_tokenizer *prep_tokenizer_load(const prep_tokenizer_files *f, char *err, size_t errlen) {
    if (f->tokenizer_json) return tf_tokenizer_load_json(f->tokenizer_json, err, errlen);
    return tf_tokenizer_load(f->vocab_json, f->merges_txt, err, errlen);
}

/* ---- a worker's job ------------------------------------------------------------------------------ */

typedef struct {
    tf_tokenizer *t;
    prep_job *j;
    size_t nids;
    int32_t eot;
    int failed; /* encode's failure (TF_TOKENIZER_*) */
} encoder;

/* one document: the end-of-text token, then its ids */
static int encode_doc(encoder *e, const char *text, size_t len, int eot_first) {
    prep_job *j = e->j;
    if (eot_first) {
        if (e->nids == j->ids_cap) {
            size_t cap = j->ids_cap ? 2 * j->ids_cap : 1 << 14;
            int32_t *ids = realloc(j->ids, cap * sizeof *ids);
            if (!ids) return -1;
            j->ids = ids, j->ids_cap = cap;
        }
        j->ids[e->nids++] = e->eot;
        j->docs++;
    }
    j->text_bytes += len;
    return e->failed = tf_tokenizer_encode(e->t, text, len, &j->ids, &e->nids, &j->ids_cap);
}

static int on_record(void *user, const char *text, size_t len, long long line) {
    (void)line;
    return encode_doc(user, text, len, 1) ? 1 : 0;
}

/* ids[0 .. n) into the shard's layout, in place (token i's bytes end at or before id i's start, so
   nothing is overwritten before it is read): 0, or -1 for an id the width cannot hold. */
static int pack(prep_job *j, size_t n, int token_bytes) {
    unsigned char *b = (unsigned char *)j->ids;
    const uint64_t limit = token_bytes == 2 ? 65536u : 4294967296u;
    for (size_t i = 0; i < n; i++) {
        int32_t id = j->ids[i];
        uint32_t t = (uint32_t)id;
        if (id < 0 || (uint64_t)t >= limit) {
            snprintf(j->err, sizeof j->err, "the tokenizer gave id %d, which a %s shard cannot hold", (int)id,
                     token_bytes == 2 ? "uint16" : "uint32");
            return -1;
        }
        unsigned char *p = b + i * (size_t)token_bytes;
        p[0] = (unsigned char)t, p[1] = (unsigned char)(t >> 8);
        if (token_bytes == 4) p[2] = (unsigned char)(t >> 16), p[3] = (unsigned char)(t >> 24);
    }
    return 0;
}

static void run_job(prep_pool *p, tf_tokenizer *t, prep_job *j) {
    encoder e = {t, j, 0, tf_tokenizer_eos(t), 0};
    j->docs = j->text_bytes = 0;
    j->status = PREP_OK;
    j->err[0] = 0;
    if (j->kind == PREP_JOB_TEXT) {
        if (encode_doc(&e, j->in, j->in_len, j->eot_first)) j->status = PREP_FAIL_MEMORY;
    } else {
        /* line numbers within the job: the main thread names the file's line (prep_pool.h).  Line 1
           only for the file's first job: sr_jsonl_each skips a byte order mark there, and only there */
        int rc = sr_jsonl_each(j->in, j->in_len, j->name, j->in_off == 0 ? 1 : 2, p->text_field, on_record, &e, j->err,
                               sizeof j->err);
        if (rc < 0) j->status = PREP_FAIL_INPUT;
        else if (rc) j->status = PREP_FAIL_MEMORY;
    }
    if (e.failed == TF_TOKENIZER_PATTERN_LIMIT) {
        j->status = PREP_FAIL_PATTERN;
        snprintf(j->err, sizeof j->err, "%s", tf_tokenizer_error(t));
    }
    if (j->status == PREP_OK && pack(j, e.nids, p->token_bytes)) j->status = PREP_FAIL_TOKEN;
    j->out = (const unsigned char *)j->ids;
    j->ntokens = j->status == PREP_OK ? e.nids : 0;
}

typedef struct {
    prep_pool *p;
    int k;
} worker_arg;

static void *worker(void *arg) {
    prep_pool *p = ((worker_arg *)arg)->p;
    tf_tokenizer *t = p->tok[((worker_arg *)arg)->k];
    free(arg);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stopping && p->next_work == p->fill) pthread_cond_wait(&p->work, &p->mu);
        if (p->next_work == p->fill) break; /* stopping, and nothing left */
        size_t s = p->next_work++ % p->nslot;
        p->state[s] = SLOT_WORKING;
        pthread_mutex_unlock(&p->mu);
        run_job(p, t, &p->job[s]);
        pthread_mutex_lock(&p->mu);
        p->state[s] = SLOT_DONE;
        pthread_cond_broadcast(&p->done);
    }
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0) p->cpu_s += (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

prep_pool *prep_pool_start(const prep_tokenizer_files *f, int nthreads, const char *text_field, char *err,
                           size_t errlen) {
    prep_pool *p = calloc(1, sizeof *p);
    if (!p) return snprintf(err, errlen, "out of memory"), NULL;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    p->nthreads = nthreads;
    p->text_field = text_field;
    p->nslot = 4 * (size_t)nthreads;
    p->job = calloc(p->nslot, sizeof *p->job);
    p->state = calloc(p->nslot, sizeof *p->state);
    p->thread = calloc((size_t)nthreads, sizeof *p->thread);
    p->tok = calloc((size_t)nthreads, sizeof *p->tok);
    if (!p->job || !p->state || !p->thread || !p->tok) {
        snprintf(err, errlen, "out of memory");
        prep_pool_stop(p, NULL);
        return NULL;
    }
    /* the tokenizer before any thread starts: a bad tokenizer file is reported once, and before
       any input is read; the threads' clones share its tables and its cache */
    if (!(p->base = prep_tokenizer_load(f, err, errlen))) {
        prep_pool_stop(p, NULL);
        return NULL;
    }
    for (int k = 0; k < nthreads; k++)
        if (!(p->tok[k] = tf_tokenizer_clone(p->base, err, errlen))) {
            prep_pool_stop(p, NULL);
            return NULL;
        }
    p->token_bytes = sr_shard_token_bytes(tf_tokenizer_vocab_size(p->base));
    for (int k = 0; k < nthreads; k++) {
        worker_arg *a = malloc(sizeof *a);
        if (a) *a = (worker_arg){p, k};
        if (!a || pthread_create(&p->thread[k], NULL, worker, a)) {
            free(a);
            snprintf(err, errlen, "cannot start tokenizing thread %d of %d", k + 1, nthreads);
            prep_pool_stop(p, NULL);
            return NULL;
        }
        p->started++;
    }
    return p;
}

int prep_pool_vocab_size(const prep_pool *p) { return tf_tokenizer_vocab_size(p->base); }
int prep_pool_token_bytes(const prep_pool *p) { return p->token_bytes; }
int prep_pool_eos(const prep_pool *p, const char **from) {
    *from = tf_tokenizer_eos_from(p->base);
    return tf_tokenizer_eos(p->base);
}

prep_job *prep_pool_free_slot(prep_pool *p) {
    if (p->fill - p->take == p->nslot) return NULL;
    prep_job *j = &p->job[p->fill % p->nslot];
    j->out = NULL;
    j->ntokens = 0;
    j->docs = j->text_bytes = 0;
    j->status = PREP_OK;
    j->source = NULL;
    return j;
}

void prep_pool_submit(prep_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->state[p->fill % p->nslot] = SLOT_FILLED;
    p->fill++;
    pthread_cond_signal(&p->work);
    pthread_mutex_unlock(&p->mu);
}

prep_job *prep_pool_next_done(prep_pool *p) {
    if (p->take == p->fill) return NULL;
    size_t s = p->take % p->nslot;
    pthread_mutex_lock(&p->mu);
    while (p->state[s] != SLOT_DONE) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    return &p->job[s];
}

void prep_pool_release(prep_pool *p) {
    pthread_mutex_lock(&p->mu);
    p->state[p->take % p->nslot] = SLOT_EMPTY;
    p->take++;
    pthread_mutex_unlock(&p->mu);
}

void prep_pool_stop(prep_pool *p, double *worker_cpu_s) {
    if (!p) return;
    if (p->started) {
        pthread_mutex_lock(&p->mu);
        p->stopping = 1;
        pthread_cond_broadcast(&p->work);
        pthread_mutex_unlock(&p->mu);
        for (int k = 0; k < p->started; k++) pthread_join(p->thread[k], NULL);
    }
    if (worker_cpu_s) *worker_cpu_s = p->cpu_s;
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->work);
    pthread_cond_destroy(&p->done);
    for (size_t i = 0; p->job && i < p->nslot; i++) free(p->job[i].ids);
    for (int k = 0; p->tok && k < p->nthreads; k++) tf_tokenizer_free(p->tok[k]);
    tf_tokenizer_free(p->base); /* after its clones */
    free(p->job), free(p->state), free(p->thread), free(p->tok);
    free(p);
}
