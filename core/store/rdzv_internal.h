/*
 * What the files of the rendezvous share, and nothing outside store/rdzv*.c uses.  store/rdzv.h
 * has the lifecycle; the work is split by who does it:
 *
 *   rdzv.c          setting up (where the store is, its token, the job id) and the interface
 *                   the supervisor drives (store/rdzv.h), routed to one of the two sides below
 *   rdzv_host.c     node 0's agent: admits agents, notices the ones that go away, decides what
 *                   follows an attempt and tells everyone (the verdict), waits for them to read it
 *   rdzv_agent.c    every other agent: joins, watches for the verdict, acknowledges it
 *   rdzv_restart.c  both sides of a restart: stopping, waiting for every agent, the next attempt
 *   rdzv_protocol.c the keys and values they exchange, and the failure one of them records
 *
 * Contract of each function below at its declaration.  Like the rest of store/, none prints.
 */
#ifndef SR__STORE_RDZV_INTERNAL_H
#define SR__STORE_RDZV_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "store/rdzv.h"

/* rdzv.c: the steps behind sr__rdzv_step and sr__rdzv_report, one per thing that happens (the
   unit tests call them one by one).  Serves/reads what poll reported. */
void sr__rdzv_handle(sr__rdzv *r, const struct pollfd *pfds, int n);
int sr__rdzv_timeout_ms(const sr__rdzv *r);
/* Publishes a failure of this attempt (node: where it happened); the hosting agent decides what
   follows from the first one. */
void sr__rdzv_report_failure(sr__rdzv *r, int node, const char *what, sr__rdzv_failure kind);
/* SR__RDZV_DONE: results to node 0, and "done" when `succeeded`.  1 when they stay local. */
int sr__rdzv_report_done(sr__rdzv *r, const char *results, size_t len, int succeeded);
/* Hosting agent: every agent it refused or gave the verdict has read it (or had its time to): it
   may stop serving.  1 for the other agents. */
int sr__rdzv_settled(const sr__rdzv *r);
/* Hosting agent: every agent is done and nothing failed: the verdict is success. */
void sr__rdzv_succeed(sr__rdzv *r);
/* Whether this attempt's outcome is known here; 1 for the host and a lone agent once decided. */
int sr__rdzv_outcome_known(const sr__rdzv *r);
/* Other agents: tells the host the verdict was read. */
void sr__rdzv_ack(sr__rdzv *r);
/* Hosting agent: every agent reported done. */
int sr__rdzv_all_done(sr__rdzv *r);
void sr__rdzv_lose_host(sr__rdzv *r, const char *what);
void sr__rdzv_peer_silent(sr__rdzv *r, int agent);

/* rdzv_restart.c.  RESTART, once this agent's workers are all gone: other agents report it and
   start waiting for the next attempt's start.  0 or -1 (the host went away). */
int sr__rdzv_stopped(sr__rdzv *r);
/* RESTART: 1 when the next attempt may start (host: every agent stopped or came back, and
   restart_delay passed; others: the host said so), 0 not yet, -1 it never will (phase FAILED). */
int sr__rdzv_restart_ready(sr__rdzv *r);
/* RESTART -> RUNNING in the next attempt (host: tells every agent to start). */
void sr__rdzv_next_attempt(sr__rdzv *r);
/* RESTART, this agent was interrupted: the restart is called off (host: everyone hears `what`). */
void sr__rdzv_abandon_restart(sr__rdzv *r, const char *what);

/* rdzv_protocol.c.  Records why the attempt failed (r->failed_elsewhere, failed_node,
   failed_config): every side calls it, so it lives below them all. */
void sr__rdzv_set_failure(sr__rdzv *r, int node, int config, const char *what);

/* rdzv_host.c.  Node 0's agent starts the store server on `port` and gets ready to admit the
   other agents.  0, or -1 with diag saying why. */
int sr__rdzv_host_start(sr__rdzv *r, const sr__rdzv_args *a, int port, sr__diag *diag);
/* The deciding agent (the host, or a lone agent), RUNNING only: what the first failure of an
   attempt means for the job: r->phase, and the verdict sent to the other agents. */
void sr__rdzv_decide(sr__rdzv *r, int node, sr__rdzv_failure kind, const char *what);
/* After the server handled what poll reported: admits the agents whose fingerprints arrived,
   notices those that went away, and decides on a failure another agent reported. */
void sr__rdzv_host_handle(sr__rdzv *r);
/* SR__RDZV_SAVED: this agent's workers wrote checkpoint `step` (the host counts it for
   elastic_join = next_save; the other agents ignore it). */
void sr__rdzv_saved(sr__rdzv *r, long long step);

/* rdzv_agent.c.  Another agent joins the run through node 0's agent (r->host, port, token set):
   accepted into an attempt (r->attempt), it waits for that attempt's start when it is not the
   first.  0, or -1 with diag saying why. */
int sr__rdzv_join(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
/* A fresh watch connection with a pending wait on `key`.  0, or -1 with err. */
int sr__rdzv_rewatch(sr__rdzv *r, const char *key, char *err, size_t errlen);
/* The watch's wait ended (poll said so): reads the verdict, or the next attempt's start. */
void sr__rdzv_read_watch(sr__rdzv *r);

/* rdzv_elastic.c: an elastic job's membership (nnodes = MIN:MAX). */
/* Hosting agent: the node rank of `agent` (a slot) in the current world. */
int sr__rdzv_node_of(const sr__rdzv *r, int agent);
/* Hosting agent: gives each arrived ticket a free slot (or "full"). */
void sr__rdzv_elastic_arrivals(sr__rdzv *r);
/* Hosting agent, before the first world: 1 when it may form (MIN agents there for rdzv_last_call,
   or MAX), 0 not yet, -1 never (rdzv_timeout passed since `started`; diag names what is missing).
   *min_at: when MIN were there (0: not yet), kept between calls. */
int sr__rdzv_elastic_formable(sr__rdzv *r, double started, double *min_at, sr__diag *diag);
/* Hosting agent: `attempt`'s world takes those waiting to join, is published, and every agent in it
   is told to start (one left out whose connection is still open hears it has no start). */
void sr__rdzv_elastic_start(sr__rdzv *r, int attempt);
/* Hosting agent: how many agents the next world would have (itself, those taking part and those
   waiting to). */
int sr__rdzv_next_world_size(const sr__rdzv *r);
/* Hosting agent: those waiting take part from `attempt` on; publishes its members
   (run/A/members) and sets r->world_nodes/world_rank. */
void sr__rdzv_publish_world(sr__rdzv *r, int attempt);
/* Other agents: attempt's members from the store: r->world_nodes/world_rank.  0, or -1 with err. */
int sr__rdzv_read_world(sr__rdzv *r, int attempt, char *err, size_t errlen);
/* Other agents, arriving: a slot from the host (r->agent_id).  0, SR__RDZV_UNREACHABLE (diag:
   no answer, or the job is full), or -1. */
int sr__rdzv_take_slot(sr__rdzv *r, double timeout_s, sr__diag *diag);

/* rdzv_protocol.c: 32 random hex digits (cut to len - 1), for tokens and job ids. */
void sr__rdzv_random_token(char *out, size_t len);

/* rdzv_etcd.c: the etcd backend (rdzv_backend = etcd). */
typedef struct sr__rdzv_etcd sr__rdzv_etcd;
/* Connects to etcd, takes this agent's lease and registers it (r->etcd).  0, SR__RDZV_UNREACHABLE or
   -1 with diag. */
int sr__rdzv_etcd_open(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
/* One election (r->token: what this agent's store would take): 1 this agent leads (r->host its
   address; r->job_id, attempt and restarts_used carried on from etcd's record, took_over when
   there was one), 0 another leads (r->host, port and token say where; *rev: its key's revision),
   SR__RDZV_UNREACHABLE or -1 with diag. */
int sr__rdzv_etcd_elect(sr__rdzv *r, int port, int64_t *rev, sr__diag *diag);
/* Waits until the leader key is no longer the one at revision rev (its leader went: deleted with its
   lease, or replaced), until `until` (sr__now_s).  0, or -1 with diag. */
int sr__rdzv_etcd_await_new_leader(sr__rdzv *r, int64_t rev, double until, sr__diag *diag);
/* Hosting agent, at each attempt's start: the job's ids, attempt and restarts, for the next leader.
   0, or -1 (etcd did not take it: a later leader carries on from an older record). */
int sr__rdzv_etcd_publish_job(sr__rdzv *r);
/* Hosting agent: r->expect_agents from etcd (at most five times a second). */
void sr__rdzv_etcd_count(sr__rdzv *r);
/* Stops renewing, gives the lease back (this agent's keys go), and the job's record too when the
   job is over. */
void sr__rdzv_etcd_close(sr__rdzv_etcd *e, int job_over);

#endif
