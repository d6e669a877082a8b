#define _GNU_SOURCE
#include "base/watch.h"

#include <string.h>
#include <sys/mman.h>

const char *const sr__watch_coll_names[] = {"all_gather", "reduce_scatter", "all_reduce", "broadcast", "barrier"};

static const char *const phase_names[] = {"no phase", "forward", "backward", "optimizer", "eval", "checkpoint"};

const char *sr__watch_phase_name(int phase) {
    return phase >= 0 && phase < (int)(sizeof phase_names / sizeof *phase_names) ? phase_names[phase] : "?";
}

sr__watch_slot *sr__watch_map(int n) {
    if (n <= 0) return NULL;
    void *p = mmap(NULL, (size_t)n * sizeof(sr__watch_slot), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    sr__watch_slot *s = p;
    for (int i = 0; i < n; i++) atomic_store(&s[i].step, -1), atomic_store(&s[i].unit, -1);
    return s;
}

void sr__watch_unmap(sr__watch_slot *s, int n) {
    if (s) munmap(s, (size_t)n * sizeof(sr__watch_slot));
}

static sr__watch_slot *mine;

void sr__watch_attach(sr__watch_slot *slot) { mine = slot; }

/* Relaxed: the agent only needs to see each value eventually, and a change of beat soon after. */
#define PUT(field, v) atomic_store_explicit(&mine->field, (v), memory_order_relaxed)
#define BEAT() atomic_fetch_add_explicit(&mine->beat, 1, memory_order_relaxed)

void sr__watch_step(long long step, int micro) {
    if (!mine) return;
    PUT(step, step);
    PUT(micro, micro);
    BEAT();
}

void sr__watch_phase(sr__phase phase) {
    if (!mine) return;
    PUT(phase, (int)phase);
    if (phase != SR__PHASE_FORWARD && phase != SR__PHASE_BACKWARD) PUT(unit, -1);
    BEAT();
}

void sr__watch_unit(int unit) {
    if (!mine) return;
    PUT(unit, unit);
    BEAT();
}

void sr__watch_collective_begin(int kind) {
    if (!mine) return;
    PUT(coll_kind, kind);
    atomic_fetch_add_explicit(&mine->coll_seq, 1, memory_order_relaxed);
    PUT(in_coll, 1);
    BEAT();
}

void sr__watch_collective_end(void) {
    if (!mine) return;
    PUT(in_coll, 0);
    BEAT();
}

void sr__watch_progress(void) {
    if (!mine) return;
    PUT(said, 1);
    BEAT();
}

unsigned long long sr__watch_bits(double v) {
    unsigned long long b;
    memcpy(&b, &v, sizeof b);
    return b;
}

double sr__watch_double(unsigned long long bits) {
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

void sr__watch_plan(long long steps_total) {
    if (!mine) return;
    PUT(steps_total, steps_total);
}

void sr__watch_trained(long long steps_done, double loss, double tok_s, double step_s, unsigned long long mem_bytes) {
    if (!mine) return;
    PUT(loss, sr__watch_bits(loss));
    PUT(tok_s, sr__watch_bits(tok_s));
    PUT(step_s, sr__watch_bits(step_s));
    PUT(mem_bytes, mem_bytes);
    PUT(steps_done, steps_done); /* last: a reader that sees the step sees its figures soon after */
    BEAT();
}

void sr__watch_checkpoint(double seconds, unsigned long long bytes) {
    if (!mine) return;
    PUT(ckpt_s, sr__watch_bits(seconds));
    PUT(ckpt_bytes, bytes);
    atomic_fetch_add_explicit(&mine->ckpt_count, 1, memory_order_relaxed);
    BEAT();
}
