/*
 * The bytes agents exchange through node 0's store during the rendezvous: the keys, and the
 * values that carry a failure report or a verdict.  Every store/rdzv*.c file names keys and reads
 * and writes those values through here; the rest of the run never sees them.  Agents of one
 * version talk to each other, and these bytes are pinned by tests/unit/test_rdzv.c.
 *
 * Keys (k: an agent's index, j: its join, A: the attempt; j is left out for an agent's first
 * join, A is 0 for the first attempt):
 *   run/joins/k                a counter: how many times agent k joined (2 and up: it came back)
 *   run/fingerprint/k[/j]      agent k -> host: what defines the run as agent k sees it
 *   run/accepted/k[/j]         host -> agent k: "ok A <job id>" (the attempt it joins), or why it
 *                              is refused
 *   run/A/failure              any agent -> host: the first failure it saw, a report
 *                              ("node:kind:message", kind an sr__rdzv_failure)
 *   run/A/done/k, run/A/results/k   agent k -> host: its workers are done, and their results
 *   run/A/outcome/k            host -> agent k: the verdict, what follows the attempt
 *                              ("node:kind:message", kind an sr__rdzv_verdict); agent k's watch
 *                              connection waits on it
 *   run/A/ack/k                agent k -> host: it read the final verdict (and reported its results)
 *   run/A/stopped/k            agent k -> host: after a restart verdict, its workers are gone
 *   run/A/start/k              host -> agent k: "go" (start attempt A's workers), or "fail:why", or
 *                              (elastic, an agent waiting to join) "done:why": the job ended well
 *   run/A/quit/k               agent k -> host: it was interrupted while attempt A ends in a
 *                              restart (why): the host calls the restart off
 *   run/tickets                elastic: a counter, one ticket T per arriving agent (other than node 0's)
 *   run/arrival/T              elastic: agent -> host: ticket T wants a slot
 *   run/slot/T                 elastic: host -> agent: its slot k, or "full:why"
 *   run/A/members              elastic: host -> agents: attempt A's world, its slots in order
 *                              ("0,2,3": slot 2 is node rank 1), set before any "go"
 *   run/alive/k/j              never set: agent k's j-th join waits on it from a connection of its
 *                              own as long as it lives
 *
 * Contract: sr__rdzv_key formats one key into the caller's buffer (64 bytes hold every key);
 * sr__rdzv_message_format writes "node:kind:message", cut to the buffer; sr__rdzv_message_parse
 * reads one back, and reads a value that is not of that form as kind 'f', node -1, the whole value
 * its message.  Never prints, never fails.
 */
#ifndef SR__STORE_RDZV_PROTOCOL_H
#define SR__STORE_RDZV_PROTOCOL_H

#include <stddef.h>

#include "store/rdzv.h"

/* What the host's verdict (run/A/outcome/k) says follows an attempt: the letter on the wire.  The
   kinds of a failure report are sr__rdzv_failure's, another set of letters. */
typedef enum sr__rdzv_verdict {
    SR__VERDICT_SUCCEEDED = 'o', /* every rank succeeded */
    SR__VERDICT_FAILED = 'f',
    SR__VERDICT_CONFIG = 'c',    /* failed: agents started with different jobs (exit 2) */
    SR__VERDICT_RESTART = 'r',   /* the job starts again in the next attempt */
    SR__VERDICT_PREEMPTED = 'p', /* every rank stops with a checkpoint */
    /* elastic jobs: the world changes at the next attempt (no restart of max_restarts) */
    SR__VERDICT_REFORM = 'n', /* at once: a node was lost */
    SR__VERDICT_RESHAPE = 'g' /* after a checkpoint: a node joins, or leaves with notice */
} sr__rdzv_verdict;

/* Formats `fmt` (holding up to two %d: a then b) into buf; returns buf. */
char *sr__rdzv_key(char *buf, size_t len, const char *fmt, int a, int b);

/* "node:kind:message" into v (cut to vlen); returns its length. */
int sr__rdzv_message_format(char *v, size_t vlen, int node, char kind, const char *what);
/* Reads v[0 .. len) back: *node, *kind (a letter) and the message into msg. */
void sr__rdzv_message_parse(const char *v, size_t len, int *node, char *kind, char *msg, size_t mlen);

/* The phase a verdict puts the attempt in. */
sr__rdzv_phase sr__rdzv_verdict_phase(sr__rdzv_verdict v);

#endif
