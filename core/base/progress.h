/*
 * What a worker tells its agent while it runs, besides its output: that the work began, the step
 * it reached, the checkpoints it wrote.  The agent needs these to decide whether a failure may be
 * retried (not before training began), to say in its summary which step each failed rank had
 * reached, and to say where a preempted run left its checkpoint.
 *
 * Lifecycle: the agent creates the results pipe of each worker (close-on-exec) -> the worker
 * passes its end to sr__progress_set_fd() -> the worker and the trainer send records with
 * sr__progress_send() -> at the end the worker writes its result object to the same pipe -> the
 * agent strips the records from what it reads with sr__progress_take(), leaving the result.
 *
 * Wire format: each record is 0x1E (ASCII record separator, which JSON text never holds raw), one
 * kind letter, the text, '\n'.  Records always come before the result object.
 */
#ifndef SR__BASE_PROGRESS_H
#define SR__BASE_PROGRESS_H

#include <stddef.h>

#define SR__PROGRESS_MARK '\x1e'

typedef enum sr__progress_kind {
    SR__PROGRESS_STARTED = 'S',    /* the task's work began: training (model task), main() or the program */
    SR__PROGRESS_STEP = 'P',       /* text: the optimizer steps done */
    SR__PROGRESS_CHECKPOINT = 'C', /* text: "STEP PATH" of a checkpoint just written */
    SR__PROGRESS_PREEMPTED = 'E',  /* text: "STEP PATH": stopped on request after writing this checkpoint */
    SR__PROGRESS_UNREAD = 'K',     /* a main task returned: "" first, then "KEY WHERE" per [task] key it never read */
    SR__PROGRESS_UNFIXABLE = 'U'   /* text: why the worker fails in a way a restart cannot fix, and what to do
                                     (a full disk; a loss that is not finite); the agent does not restart */
} sr__progress_kind;

/* The value the agent sends with SIGTERM (sigqueue) when a worker must stop at once: its run
   failed elsewhere or is being restarted.  A plain SIGTERM (kill, Slurm, a cloud's notice) asks a
   model task to finish its step and write a checkpoint first (trainer/preempt.h). */
#define SR__STOP_NOW_VALUE 0x53544f50 /* "STOP" */

/* Worker: where records go (-1: nowhere). */
void sr__progress_set_fd(int fd);
/* Worker: sends one record (text without newlines); never blocks the caller for long and never
   fails it: a record that cannot be written is dropped. */
void sr__progress_send(sr__progress_kind kind, const char *text);

/* Worker: after writing `path` failed with errno `err`: when a restart cannot fix that (ENOSPC,
   EDQUOT, EROFS), tells the agent with SR__PROGRESS_UNFIXABLE ("could not write PATH: reason; what to
   do"), once per process.  errno is left as it was. */
void sr__progress_io_failed(int err, const char *path);

/* What the agent keeps of a worker's records. */
typedef struct sr__progress {
    int started;
    long long step;      /* -1: no step reported */
    long long ckpt_step; /* the newest checkpoint's step, -1: none */
    char ckpt_path[1024];
    int preempted;       /* stopped on request, after writing ckpt_path */
    char unfixable[512]; /* SR__PROGRESS_UNFIXABLE's text ("": none) */
    int keys_said;       /* SR__PROGRESS_UNREAD came: unread[] lists the [task] keys the task never read */
    char unread[2048];   /* "KEY WHERE\n" each (what fits) */
} sr__progress;

void sr__progress_init(sr__progress *p);
/* Agent: removes every complete record at the start of buf[0..*n) into p, moving what follows to
   the front; returns the bytes removed.  A record cut short by the end of the data stays. */
size_t sr__progress_take(sr__progress *p, char *buf, size_t *n);

#endif
