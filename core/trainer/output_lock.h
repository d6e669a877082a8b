/*
 * One run per output_dir: the lock file output_dir/.shardrun.lock, which the agent holding rank 0
 * takes once per launch, before any worker starts, and removes when the launch ends (also when it
 * failed or was stopped by a signal).  Restarts inside the launch (max_restarts) keep it.
 *
 * The file names its holder (launch id, Slurm requeue key and count, host, pid and the pid's
 * start time, since when) and is made whole beside the lock (a file of this process's own name,
 * written and synced) and then link()ed to its name: link is atomic on local file systems and
 * on NFS, where O_EXCL was not always.  A thread refreshes the lock file's modification time
 * every SR__OUTPUT_LOCK_BEAT_S seconds: its heartbeat.
 *
 * A lock is taken over only when it is proven stale:
 *   - its host is this host and its pid is gone (or is another process now: its start time
 *     differs);
 *   - it names this Slurm job (the requeue key) at an earlier SLURM_RESTART_COUNT: Slurm requeues
 *     a job only after the earlier incarnation ended;
 *   - its heartbeat is older than SR__OUTPUT_LOCK_STALE_S, measured on the file system's clock
 *     (against the modification time of the file just written beside it), so that the clocks of
 *     two hosts never have to agree.
 * Anything else is refused, naming the holder.
 *
 * Nothing here prints: a failure fills err[] and returns -1; a takeover fills note[].
 */
#ifndef SR__TRAINER_OUTPUT_LOCK_H
#define SR__TRAINER_OUTPUT_LOCK_H

#include <stddef.h>

#define SR__OUTPUT_LOCK_NAME ".shardrun.lock"
enum {
    SR__OUTPUT_LOCK_BEAT_S = 10,  /* how often the holder refreshes the heartbeat */
    SR__OUTPUT_LOCK_STALE_S = 300 /* a heartbeat older than this, from another host, is stale:
                                     well above the beat and NFS's attribute cache (60 s at most) */
};

/* Who holds (or asks for) a lock. */
typedef struct sr__lock_owner {
    char launch[80];      /* SHARDRUN_JOB_ID of the launch */
    char requeue_key[96]; /* "" outside Slurm */
    int requeue_count;    /* SLURM_RESTART_COUNT, -1 when unset */
    char host[256];
    long pid;
    unsigned long long pid_start; /* the pid's start time (/proc/PID/stat), 0: unknown */
    long long since;              /* when it was taken, seconds since the epoch */
} sr__lock_owner;

typedef struct sr__output_lock sr__output_lock;

/* The start time of pid on this host (field 22 of /proc/PID/stat, in clock ticks since boot), 0 when
   it is gone; with a pid reused since, another value.  *zombie (when not NULL): it has ended and only
   waits to be reaped. */
unsigned long long sr__pid_start_time(long pid, int *zombie);

/* This process as an owner for launch and requeue_key (either may be ""). */
void sr__lock_owner_self(sr__lock_owner *me, const char *launch, const char *requeue_key);

/* Takes dir's lock for me: 0 with *out (the heartbeat runs until release), or -1 with err[] (the
   holder named, or why the lock cannot be made).  note[] is "" or says which stale lock was taken
   over and why it was stale.  dir must exist. */
int sr__output_lock_take(const char *dir, const sr__lock_owner *me, sr__output_lock **out, char *note, size_t notelen,
                         char *err, size_t errlen);

/* Stops the heartbeat and removes the lock.  0, or -1 with err[] when the lock is no longer this
   process's (another run took it over meanwhile: it is left to that run).  NULL: nothing to do. */
int sr__output_lock_release(sr__output_lock *l, char *err, size_t errlen);

#endif
