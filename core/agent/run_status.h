/*
 * The run's status file, output_dir/.shardrun.status, that `shardrun status OUTPUT_DIR` reads from
 * another terminal or host (cli/cmd_status.c).  The agent holding rank 0 (the one that holds the
 * output folder's lock, agent/run_lock.h) writes it: once when it takes the lock, then every
 * SR__STATUS_PERIOD_S seconds from its hang watchdog's check (agent/watchdog.c, which has every
 * rank's record through node 0's store), and once more when the launch ends, with the exit code.
 * Each write is whole: a temporary file renamed over the old one.
 *
 * The file is text, one "KEY VALUE" per line, then one "rank ..." line per rank (SR__STATUS_RANK
 * names its fields).  Nothing here stops the run: a write that fails is retried at the next period.
 */
#ifndef SR__AGENT_RUN_STATUS_H
#define SR__AGENT_RUN_STATUS_H

#define SR__STATUS_NAME ".shardrun.status"
#define SR__STATUS_MAGIC "shardrun status 1"
/* the fields of a rank line, in order */
#define SR__STATUS_RANK                                                                                                \
    "rank RANK NODE HOST PID STATE STEPS_DONE STEPS_TOTAL PHASE AGE_S LOSS TOKENS_PER_S STEP_S MEM_BYTES CKPT_COUNT "  \
    "CKPT_S CKPT_BYTES STALE"
enum {
    SR__STATUS_PERIOD_S = 2, /* how often a running launch rewrites it */
    SR__STATUS_STALE_S = 60  /* a running status not rewritten for this long, from another host: stale */
};

/* One rank as the agent holding rank 0 knows it. */
typedef struct sr__rank_status {
    int rank, node, pid;
    char host[64];
    char state;                        /* R running, S sleeping, T stopped, D in the kernel, Z gone, ? */
    long long steps_done, steps_total; /* steps_total 0: not a trainer */
    int phase;                         /* sr__phase */
    double age;                        /* seconds since its last progress */
    double loss, tok_s, step_s, ckpt_s;
    unsigned long long mem_bytes, ckpt_count, ckpt_bytes;
    int stale; /* its node's agent went silent: what it said last */
} sr__rank_status;

/* The agent that took the output folder's lock: the file's folder and the launch's id; writes the
   first status (no rank yet). */
void sr__run_status_begin(const char *dir, const char *launch);
/* Every rank now (at most every SR__STATUS_PERIOD_S seconds does it write). */
void sr__run_status_update(const sr__rank_status *rs, int n, int attempt, unsigned long long hangs);
/* The launch ended with exit code `code`: the last status, with the ranks as last written. */
void sr__run_status_end(int code);

#endif
