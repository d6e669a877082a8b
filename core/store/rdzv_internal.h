/*
 * What the files of the rendezvous share, and nothing outside store/rdzv*.c uses.  store/rdzv.h
 * has the lifecycle; the work is split by who does it:
 *
 *   rdzv.c          setting up (where the store is, its token, the job id) and the calls every
 *                   agent makes, routed to one of the two sides below
 *   rdzv_host.c     node 0's agent: admits agents, notices the ones that go away, decides what
 *                   follows an attempt and tells everyone (the verdict), waits for them to read it
 *   rdzv_agent.c    every other agent: joins, watches for the verdict, acknowledges it
 *   rdzv_restart.c  both sides of a restart: stopping, waiting for every agent, the next attempt
 *   rdzv_protocol.c the keys and values they exchange, and the failure one of them records
 *
 * Contract of each function below at its declaration.  Like the rest of store/, none prints.
 */
#ifndef SR_STORE_RDZV_INTERNAL_H
#define SR_STORE_RDZV_INTERNAL_H

#include <stddef.h>

#include "base/diag.h"
#include "store/rdzv.h"

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

/* rdzv_agent.c.  Another agent joins the run through node 0's agent (r->host, port, token set):
   accepted into an attempt (r->attempt), it waits for that attempt's start when it is not the
   first.  0, or -1 with diag saying why. */
int sr__rdzv_join(sr__rdzv *r, const sr__rdzv_args *a, sr__diag *diag);
/* A fresh watch connection with a pending wait on `key`.  0, or -1 with err. */
int sr__rdzv_rewatch(sr__rdzv *r, const char *key, char *err, size_t errlen);
/* The watch's wait ended (poll said so): reads the verdict, or the next attempt's start. */
void sr__rdzv_read_watch(sr__rdzv *r);

#endif
