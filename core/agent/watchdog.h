/*
 * The agent's hang watchdog ([shardrun] hang_timeout): it reads what each of its workers publishes
 * in shared memory (base/watch.h) and, across agents, goes through node 0's store: every other
 * agent sets its record there and reads node 0's (two requests a period, so node 0 serves a number
 * of requests that grows like the agents, not their square); node 0's agent reads every record
 * where its store keeps them (no request) and alone judges every rank; the others judge node 0's
 * silence only.  The run hangs when, for hang_timeout seconds,
 *   - ranks wait in a collective that another rank has not entered (it is behind), or
 *   - no rank made progress while one waits in a collective (a peer that never answers: a rank in
 *     another node whose agent went silent, a link that died without a FIN), or
 *   - no rank of a model task, or of a main task that calls sr_progress(), made progress at all
 *     (every rank stuck outside a collective).
 * It then writes one report: which rank is behind (host, pid, its state from /proc: stopped, in
 * the kernel, running), or which node went silent, and where every rank is.
 *
 * Lifecycle (supervisor.c): sr__watchdog_new() once, after the rendezvous, before any fork ->
 * per attempt sr__watchdog_begin() before forking, the child sr__watch_attach(sr__watchdog_slot())
 * -> sr__watchdog_started() for each worker forked -> in the loop sr__watchdog_check() (at most
 * sr__watchdog_timeout_ms() apart) -> sr__watchdog_free().  Across nodes, the agents that do not
 * host the store send their record and fetch node 0's from a thread of their own, so a store that
 * stopped answering (node 0 stopped, a dead link) never blocks the agent's loop; then node 0's
 * record ages, and the watchdog names it (node 0's agent names another agent whose record ages).
 */
#ifndef SR__AGENT_WATCHDOG_H
#define SR__AGENT_WATCHDOG_H

#include <stddef.h>
#include <sys/types.h>

#include "base/watch.h"
#include "run/run.h"
#include "store/store.h"

typedef struct sr__watchdog sr__watchdog;

/* NULL when memory is short (then it says so).  With run->settings.hang_timeout 0 it watches without a
   verdict: the ranks' records still go to the status file and the metrics (publish()). */
sr__watchdog *sr__watchdog_new(sr__run *run);
/* A new attempt with n workers: their slots zeroed, the clocks started. */
void sr__watchdog_begin(sr__watchdog *wd, int n, int attempt);
sr__watch_slot *sr__watchdog_slot(sr__watchdog *wd, int i);
void sr__watchdog_started(sr__watchdog *wd, int i, int rank, pid_t pid);

typedef struct sr__hang {
    char report[8192]; /* the report, lines ending in '\n' (printed as is) */
    char what[900];    /* one line for the failure report and the summary */
    int lost_node;     /* the node whose agent went silent, -1: none */
    int lost_agent;    /* that agent's index in the rendezvous, -1: none */
    int host_lost;     /* that node is node 0's, and this agent is another one's */
    int started;       /* every local rank had begun its work (a restart may help) */
} sr__hang;

/* Looks at every rank (at most once a second does it any work); 1 with *h filled when the run
   hangs, else 0.  `reaped[i]`: worker i is gone (not watched). */
int sr__watchdog_check(sr__watchdog *wd, const int *reaped, sr__hang *h);
/* Another agent than node 0's whose attempt is ending (a failure here, a stop) and waits for node
   0's verdict: 1 when node 0's agent has sent nothing new for hang_timeout (the verdict will not
   come).  Keeps this agent's record going meanwhile, so node 0 does not take it for silent. */
int sr__watchdog_host_silent(sr__watchdog *wd);
/* Around each fork() of a worker: waits until the exchange thread sleeps and holds it there
   (see watchdog.c for why); returns what sr__watchdog_fork_end() wants back. */
int sr__watchdog_fork_begin(sr__watchdog *wd);
void sr__watchdog_fork_end(sr__watchdog *wd, int held);
/* Milliseconds until the next check is due (-1: never). */
int sr__watchdog_timeout_ms(const sr__watchdog *wd);
void sr__watchdog_free(sr__watchdog *wd);

/* One exchange of the records through node 0's store, as every agent but node 0's makes it from
   its thread about once a second (bench/store_sim.c makes the same call for the agents it plays):
   this agent's record `mine` (NULL: none this time) set for `attempt`, then node 0's read into
   *node0 (malloc'ed; NULL when there is none yet).  c: the channel kept from the last exchange, or
   NULL to open one on link (the agent's connection to node 0's store).  Returns the channel to
   keep, NULL after an error (the next exchange opens another).  Each call ends within a few
   seconds, whatever the store does. */
sr__store *sr__watchdog_exchange(sr__store *c, sr__store_link *link, int attempt, int agent, const char *mine,
                                 char **node0);

#endif
