/*
 * What a worker is doing, published for its agent's hang watchdog through shared memory: no
 * syscall, a few relaxed stores per collective and per phase.  The agent maps one slot per worker
 * (MAP_SHARED | MAP_ANONYMOUS, before fork, so the worker inherits it); the worker's code marks its
 * step, micro-step, phase, FSDP unit and the collectives it enters and leaves; the agent's
 * watchdog (agent/watchdog.c) reads the slots about once a second and compares them.
 *
 * Lifecycle: agent sr__watch_map() before forking -> child sr__watch_attach(slot) -> pg.c
 * sr__watch_collective_begin/end, the FSDP engine and trainer sr__watch_phase/unit, a main task's
 * sr_progress() sr__watch_progress -> agent reads
 * `beat` (it changes with every mark) and the fields -> sr__watch_unmap().  A process without a
 * slot (an exec: program, a tool) marks nothing: each call is one load and a branch.
 */
#ifndef SR__BASE_WATCH_H
#define SR__BASE_WATCH_H

#include <stdatomic.h>
#include <stddef.h>

typedef enum sr__phase {
    SR__PHASE_NONE = 0, /* not in a training loop (a main task, set-up) */
    SR__PHASE_FORWARD,
    SR__PHASE_BACKWARD,
    SR__PHASE_OPTIMIZER,
    SR__PHASE_EVAL,
    SR__PHASE_CHECKPOINT
} sr__phase;

/* One worker's slot.  Every field is written by the worker only and read by the agent. */
typedef struct sr__watch_slot {
    atomic_ullong beat;     /* +1 on every mark: the agent sees progress as a change */
    atomic_llong step;      /* the optimizer step in progress (0-based), -1 before the first */
    atomic_int micro;       /* its micro-step */
    atomic_int phase;       /* sr__phase */
    atomic_int unit;        /* the FSDP wrap unit in progress, -1: none */
    atomic_ullong coll_seq; /* collectives entered by this process, over all its groups */
    atomic_int coll_kind;   /* the last one's kind (an index into sr__watch_coll_names) */
    atomic_int in_coll;     /* 1 while inside collective coll_seq */
    atomic_int said;        /* a main task called sr_progress(): its silence is a hang (agent/watchdog.c) */
    /* What the trainer says of each step and checkpoint, for `shardrun status` and the metrics
       (agent/run_status.h, agent/metrics.h); doubles as their bits (sr__watch_bits). */
    atomic_llong steps_total; /* the run's optimizer steps, 0: not a trainer */
    atomic_llong steps_done;  /* steps finished (global_step) */
    atomic_ullong loss;       /* the last step's loss (mean over ranks) */
    atomic_ullong tok_s;      /* its tokens per second, every rank's together */
    atomic_ullong step_s;     /* its seconds */
    atomic_ullong mem_bytes;  /* the engine's peak memory */
    atomic_ullong ckpt_count; /* checkpoints written in this attempt */
    atomic_ullong ckpt_s;     /* the last one's seconds */
    atomic_ullong ckpt_bytes; /* its size on disk (rank 0; 0 elsewhere) */
} sr__watch_slot;

extern const char *const sr__watch_coll_names[]; /* all_gather, reduce_scatter, all_reduce, broadcast, barrier */
const char *sr__watch_phase_name(int phase);

/* Agent: n zeroed slots shared with the children forked later, NULL when mmap failed. */
sr__watch_slot *sr__watch_map(int n);
void sr__watch_unmap(sr__watch_slot *s, int n);

/* Worker: where its marks go (NULL: nowhere). */
void sr__watch_attach(sr__watch_slot *slot);

/* Worker: the marks. */
void sr__watch_step(long long step, int micro);
void sr__watch_phase(sr__phase phase);
void sr__watch_unit(int unit);
void sr__watch_collective_begin(int kind);
void sr__watch_collective_end(void);
/* Worker: a main task's sr_progress() (shardrun/task.h). */
void sr__watch_progress(void);
/* Worker (the trainer): the run's length, each step's figures, each checkpoint's. */
void sr__watch_plan(long long steps_total);
void sr__watch_trained(long long steps_done, double loss, double tok_s, double step_s, unsigned long long mem_bytes);
void sr__watch_checkpoint(double seconds, unsigned long long bytes);
/* A double stored in an atomic_ullong, and back. */
unsigned long long sr__watch_bits(double v);
double sr__watch_double(unsigned long long bits);

#endif
