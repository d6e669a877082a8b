/*
 * The agent's Prometheus endpoint ([shardrun] metrics_port; 0: none): GET /metrics answers with
 * this agent's ranks' figures in the text exposition format 0.0.4 (step, loss, tokens/s, step
 * time, memory, last progress, checkpoints) and the launch's restarts and hangs.
 *
 * A thread of its own serves one connection at a time (each read and write times out after
 * SR__METRICS_IO_TIMEOUT_S), so a slow or stuck scraper never holds up the supervisor; the
 * watchdog's check hands it the ranks' newest figures about once a second (publish).  The thread
 * allocates nothing after it started: a worker forked while it runs finds no allocator lock
 * taken by it (see watchdog.c's fork_begin for why that matters).
 *
 * Lifecycle (cli.c): sr__metrics_start() before the rendezvous and any worker, so a port in use is
 * a configuration error (exit 2) that wastes nothing -> sr__metrics_publish() -> sr__metrics_stop().
 */
#ifndef SR__AGENT_METRICS_H
#define SR__AGENT_METRICS_H

#include <stddef.h>

#include "agent/run_status.h"

#define SR__METRICS_IO_TIMEOUT_S 2

/* Listens on port (all addresses) and starts the thread: 0, or -1 with why[]. */
int sr__metrics_start(int port, char *why, size_t len);
/* This agent's ranks now (at most SR__METRICS_MAX_RANKS kept); node, restarts and hangs so far. */
void sr__metrics_publish(const sr__rank_status *rs, int n, int node, int restarts, unsigned long long hangs);
/* Stops the thread and closes the port (nothing when none was started). */
void sr__metrics_stop(void);

enum { SR__METRICS_MAX_RANKS = 256 };

#endif
