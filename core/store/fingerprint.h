/*
 * A run's fingerprint: what defines the run as one agent sees it, as text, one "name=value" line
 * each.  Lines starting with '#' describe the agent itself (#host, #node) and are not compared.
 * Made by the run (run/run.c), published by every agent at rendezvous and compared by the hosting
 * agent (store/rdzv_host.c) before any other agent starts a worker.
 */
#ifndef SR__STORE_FINGERPRINT_H
#define SR__STORE_FINGERPRINT_H

#include <stddef.h>
#include <stdint.h>

/* 0 when they agree; else 1 with a message naming the first line on which they differ and both
   values ("mine" is node 0's, "theirs" another agent's). */
int sr__fingerprint_differ(const char *mine, const char *theirs, char *why, size_t wlen);
/* A digest (16 hex digits into hex, returned) of what defines the job: the fingerprint without the
   lines that describe one agent, so the same on every agent of the job (NULL: as ""); seed tells
   one use's digest from another's. */
char *sr__fingerprint_digest(const char *fp, uint64_t seed, char hex[17]);

#endif
