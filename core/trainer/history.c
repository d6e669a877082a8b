/* log_history entries and reading them back from a trainer_state.json (see records.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "io/json.h"
#include "trainer/records.h"

const char *const sr__hist_keys[] = {"epoch",
                                     "eval_accuracy",
                                     "eval_loss",
                                     "eval_perplexity",
                                     "eval_runtime",
                                     "eval_samples_per_second",
                                     "eval_steps_per_second",
                                     "global_batch",
                                     "grad_norm",
                                     "gradient_accumulation_steps",
                                     "learning_rate",
                                     "loss",
                                     "nodes",
                                     "restart",
                                     "step",
                                     "train_loss",
                                     "train_runtime",
                                     "train_samples_per_second",
                                     "train_steps_per_second",
                                     "world_size",
                                     NULL};

int sr__hist_key(const char *name) {
    for (int k = 0; sr__hist_keys[k]; k++)
        if (!strcmp(sr__hist_keys[k], name)) return k;
    return -1;
}

/* The keys that count something, written as integers: the step, and an elastic run's membership
   (records.c: sr__records_membership) */
static int is_count(int key) {
    static const char *const counts[] = {"step",         "world_size", "nodes", "gradient_accumulation_steps",
                                         "global_batch", "restart",    NULL};
    for (int i = 0; counts[i]; i++)
        if (!strcmp(sr__hist_keys[key], counts[i])) return 1;
    return 0;
}

void sr__hist_number(char *buf, size_t len, int key, double v) {
    if (!isfinite(v)) {
        snprintf(buf, len, "null");
        return;
    }
    if (is_count(key)) {
        snprintf(buf, len, "%lld", (long long)v);
        return;
    }
    /* Python's repr of a float, as HF's console dicts and json.dumps write it: the fewest digits
       that read back as v, fixed notation with at least one decimal ("10.0", "0.0001") while the
       exponent is within [-4, 16), else "1e-05", "1.5e+16" */
    char e[40];
    int p = 1;
    for (; p < 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    snprintf(e, sizeof e, "%.*e", p - 1, v);
    int x = atoi(strchr(e, 'e') + 1);
    if (x < -4 || x >= 16) {
        snprintf(buf, len, "%s", e);
        return;
    }
    snprintf(buf, len, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
    if (!strchr(buf, '.')) strncat(buf, ".0", len - strlen(buf) - 1);
}

int sr__history_add(sr__history *h, int n, const char *const *names, const double *values) {
    if (h->n == h->cap) {
        int c = h->cap ? 2 * h->cap : 64;
        sr__hist_entry *e = sr__realloc(h->e, (size_t)c * sizeof *e);
        if (!e) return -1;
        h->e = e, h->cap = c;
    }
    sr__hist_entry *e = &h->e[h->n];
    e->n = 0;
    for (int i = 0; i < n && e->n < SR__HIST_MAX; i++) {
        int k = sr__hist_key(names[i]);
        if (k < 0) continue;
        /* what train_log.jsonl also writes is kept at its 9 significant digits: the records agree
           with it; the rest (train_loss, epoch, eval_loss) in full, as HF prints them */
        char num[40];
        snprintf(num, sizeof num, "%.9g", values[i]);
        int logged = !strcmp(names[i], "loss") || !strcmp(names[i], "learning_rate") || !strcmp(names[i], "grad_norm");
        e->key[e->n] = k, e->v[e->n] = !isfinite(values[i]) ? NAN : logged ? strtod(num, NULL) : values[i];
        e->n++;
    }
    h->n++;
    return 0;
}

double sr__hist_get(const sr__hist_entry *e, const char *name) {
    for (int i = 0; i < e->n; i++)
        if (!strcmp(sr__hist_keys[e->key[i]], name)) return e->v[i];
    return NAN;
}

void sr__history_free(sr__history *h) {
    free(h->e);
    free(h->best_checkpoint);
    memset(h, 0, sizeof *h);
    h->best_metric = NAN;
}

/* One log_history entry: its known numeric members (others skipped). */
static int read_entry(sr__json *j, sr__history *h) {
    const char *key;
    size_t klen;
    int more;
    const char *names[SR__HIST_MAX];
    double vals[SR__HIST_MAX];
    int n = 0;
    if (sr__json_object(j) != 0) return -1;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        char name[64];
        snprintf(name, sizeof name, "%.*s", (int)(klen < 63 ? klen : 63), key);
        int k = sr__hist_key(name);
        sr__json_type ty = sr__json_peek(j);
        if (k < 0 || n == SR__HIST_MAX || (ty != SR__JSON_NUMBER && ty != SR__JSON_NULL)) {
            if (sr__json_skip(j) != 0) return -1;
            continue;
        }
        sr__json_num num = {0};
        if (ty == SR__JSON_NULL ? sr__json_null(j) : sr__json_number(j, &num)) return -1;
        names[n] = sr__hist_keys[k], vals[n++] = ty == SR__JSON_NULL ? NAN : num.value;
    }
    return more == 0 ? sr__history_add(h, n, names, vals) : -1;
}

/* The largest trainer_state.json read: a log_history entry is ~200 bytes, so a million logged steps */
#define SR__HISTORY_MAX_BYTES (256 << 20)

int sr__history_read(const char *path, sr__history *h, char *why, size_t len) {
    sr__history_free(h);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, len, "%s: %m", path);
        return -1;
    }
    /* bounded: the size is checked before anything is read (a huge or sparse file is refused at
       once), and the reading stops past the bound (a FIFO, a file that grows) */
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > SR__HISTORY_MAX_BYTES) {
        snprintf(why, len,
                 "%s is %lld bytes, more than a trainer_state.json may be (%d MiB); name the run's own "
                 "trainer_state.json",
                 path, (long long)st.st_size, SR__HISTORY_MAX_BYTES >> 20);
        fclose(f);
        return -1;
    }
    sr__buf b = {0};
    char chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n <= SR__HISTORY_MAX_BYTES) sr__buf_add(&b, chunk, k);
    fclose(f);
    if (b.n > SR__HISTORY_MAX_BYTES) {
        snprintf(why, len,
                 "%s holds more than a trainer_state.json may (%d MiB); name the run's own "
                 "trainer_state.json",
                 path, SR__HISTORY_MAX_BYTES >> 20);
        sr__buf_free(&b);
        return -1;
    }
    sr__json j;
    const char *key, *what;
    size_t klen, at;
    int more = -1, have = 0;
    sr__json_init(&j, b.s ? b.s : "", b.n, NULL);
    j.nonfinite = 1; /* HF writes a NaN loss as NaN (Python's json) */
    if (sr__json_object(&j) == 0)
        while ((more = sr__json_member(&j, &key, &klen)) > 0) {
            if (sr__json_key_is(key, klen, "log_history") && sr__json_peek(&j) == SR__JSON_ARRAY) {
                int el;
                if (sr__json_array(&j) != 0) break;
                while ((el = sr__json_element(&j)) > 0)
                    if (read_entry(&j, h) != 0) break;
                if (el != 0) break;
                have = 1;
            } else if (sr__json_key_is(key, klen, "best_metric") && sr__json_peek(&j) == SR__JSON_NUMBER) {
                sr__json_num num;
                if (sr__json_number(&j, &num) != 0) break;
                h->best_metric = num.value;
            } else if (sr__json_key_is(key, klen, "best_model_checkpoint") && sr__json_peek(&j) == SR__JSON_STRING) {
                const char *s;
                size_t sl;
                if (sr__json_string(&j, &s, &sl) != 0) break;
                free(h->best_checkpoint);
                if (!(h->best_checkpoint = sr__strndup(s, sl))) {
                    sr__json_fail(&j, "out of memory for best_model_checkpoint");
                    break;
                }
            } else if (sr__json_skip(&j) != 0) {
                break;
            }
        }
    if (more == 0) sr__json_end(&j);
    int rc = 0;
    if ((what = sr__json_error(&j, &at))) {
        snprintf(why, len, "%s is not valid JSON: %s at byte %zu", path, what, at);
        rc = -1;
    } else if (!have) {
        snprintf(why, len, "%s has no log_history (it was not written by a trainer that keeps one)", path);
        rc = -1;
    }
    sr__json_free(&j);
    sr__buf_free(&b);
    if (rc) sr__history_free(h);
    return rc;
}
