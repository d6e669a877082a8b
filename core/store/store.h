/*
 * The rendezvous store: a small TCP key-value server that the node-0 agent hosts on its own port
 * (MASTER_PORT stays free for an exec: program's framework), and the blocking client that
 * workers and the other nodes' agents use.
 *
 * Server lifecycle (agent): start -> in the agent's poll loop: pollfds / handle / timeout_ms
 * -> free.  It is single-threaded and lives in the supervisor's loop, so forking workers never
 * races with it.  Client lifecycle: connect (retries until its timeout; presents the run's token)
 * -> set/get/add/wait/check/fetch -> close.  Every call blocks on the server's answer (a wait is
 * answered by the server when its keys arrive, not polled).  Wire format: store_wire.h.
 */
#ifndef SR__CORE_STORE_H
#define SR__CORE_STORE_H

#include <poll.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr__store_server sr__store_server;

/* bind_addr: "127.0.0.1" for a single-node run, NULL for every interface.  port 0: any free. */
sr__store_server *sr__store_server_start(const char *bind_addr, int port, const char *token, char *err, size_t errlen);
int sr__store_server_port(const sr__store_server *s);
/* Fills pfds with the descriptors to watch; returns how many (at most max). */
int sr__store_server_pollfds(sr__store_server *s, struct pollfd *pfds, int max);
/* Serves what poll reported on those descriptors (a bounded batch: the caller's loop runs between
   two; when more is ready, its next poll returns at once) and expires timed-out waits. */
void sr__store_server_handle(sr__store_server *s, const struct pollfd *pfds, int n);
/* Milliseconds until the next wait expires, -1 when none. */
int sr__store_server_timeout_ms(const sr__store_server *s);
/* Direct access for the hosting agent (no connection). */
const char *sr__store_server_get(const sr__store_server *s, const char *key, size_t *len);
void sr__store_server_set(sr__store_server *s, const char *key, const void *value, size_t len);
/* The same, 0, or -1 when memory ran out (the key keeps its old value, or stays unset). */
int sr__store_server_set_checked(sr__store_server *s, const char *key, const void *value, size_t len);
/* Whether a live connection has a pending wait on `key`, a key not set yet, on any of its channels
   (the wait of a closed connection or of a closed channel is gone; O(1)):
   the hosting agent learns that another agent went away. */
int sr__store_server_waiting(const sr__store_server *s, const char *key);
/* Calls hook(ctx, key, klen) whenever a key is set, or a wait on a key not set yet is filed or
   ends (answered, timed out, or its connection or channel closed): the hosting agent then looks
   again at that key alone instead of at every agent's keys on every turn.  The hook may read the
   server (sr__store_server_get, _waiting) but change nothing. */
typedef void (*sr__store_server_hook)(void *ctx, const char *key, size_t klen);
void sr__store_server_on_key(sr__store_server *s, sr__store_server_hook hook, void *ctx);
/* Connections refused or closed for breaking the protocol (tests read it from the log). */
unsigned long sr__store_server_rejected(const sr__store_server *s);
/* Requests and connections refused because the server ran out of memory: each peer was told "the
   store ran out of memory" and its connection closed.  The hosting agent says so in its log. */
unsigned long sr__store_server_oom(const sr__store_server *s);
void sr__store_server_free(sr__store_server *s);

typedef struct sr__store sr__store;

sr__store *sr__store_connect(const char *host, int port, const char *token, double timeout_s, char *err, size_t errlen);
int sr__store_set(sr__store *c, const char *key, const void *value, size_t len);
/* 0 found (*value malloc'ed, NUL-terminated for convenience), 1 not found, -1 error. */
int sr__store_get(sr__store *c, const char *key, void **value, size_t *len);
/* The new value, or -1 with an error (values are kept >= 0 by their users). */
long long sr__store_add(sr__store *c, const char *key, long long delta);
/* 0 when every key exists, 1 on timeout (the missing keys, comma-separated, in missing), -1 on
   error.  timeout_s < 0: wait forever. */
int sr__store_wait(sr__store *c, const char *const *keys, int n, double timeout_s, char *missing, size_t mlen);
int sr__store_check(sr__store *c, const char *const *keys, int n); /* 1 all exist, 0 not, -1 error */
/* A wait and the gets that follow it, in one round trip: waits up to timeout_s (0: not at all,
   < 0: forever) until every key exists, then values[i] (malloc'ed, NUL-terminated) and lens[i]
   hold key i's value.  0, 1 on timeout (the missing keys, comma-separated, in missing; values
   untouched), -1 on error (also when the values together exceed one message, 4 MiB). */
int sr__store_fetch(sr__store *c, const char *const *keys, int n, double timeout_s, void **values, size_t *lens,
                    char *missing, size_t mlen);
/* The same, sending only part `piece` of `pieces` equal parts of each value (bytes
   [len / pieces * piece, len / pieces * (piece + 1)) of a value of len bytes). */
int sr__store_fetch_pieces(sr__store *c, const char *const *keys, int n, int piece, int pieces, double timeout_s,
                           void **values, size_t *lens, char *missing, size_t mlen);
/* Asynchronous wait for the agent's loop: send now, poll sr__store_fd(), then read the reply. */
int sr__store_wait_send(sr__store *c, const char *key);
int sr__store_fd(const sr__store *c);
const char *sr__store_error(const sr__store *c);
/* Every later call on c fails (the connection lost) when a send or a reply takes longer than this. */
int sr__store_set_io_timeout(sr__store *c, double timeout_s);
void sr__store_close(sr__store *c);

/* One connection that several handles share, each on a channel of its own (store/wire.h): an agent
   reaches node 0's store through one descriptor there (its control requests, the wait that shows
   it is alive, the wait for the verdict, the hang watchdog's exchange), not one per use, so that
   node 0's descriptor limit is not what caps the number of agents.  A thread of the link reads
   the replies and hands each to its channel; every call above works on a channel handle, from any
   thread (one call at a time per handle), and sr__store_fd() of a channel is an eventfd that turns
   readable when the reply to its sr__store_wait_send() came, or the connection ended.  A reply
   that takes longer than the handle's io timeout fails that handle only, and so does a request
   the store does not take in within it.  When the connection ends (node 0 went away) every
   handle's calls fail, as every connection's did.
   Connects as sr__store_connect does (errno ETIMEDOUT, ECONNRESET or EACCES on failure). */
typedef struct sr__store_link sr__store_link;
sr__store_link *sr__store_link_connect(const char *host, int port, const char *token, double timeout_s, char *err,
                                       size_t errlen);
/* A handle on a new channel; NULL with err (the connection ended, or memory ran out). */
sr__store *sr__store_link_open(sr__store_link *l, char *err, size_t errlen);
/* Another reference (returns l), and dropping one: the connection closes and its thread ends when
   the last reference and the last channel are gone. */
sr__store_link *sr__store_link_ref(sr__store_link *l);
void sr__store_link_release(sr__store_link *l);
/* Held around fork(): the link's thread is then not inside the allocator, whose locks a forked
   child would otherwise inherit taken when the allocator has no fork handlers (ASan's). */
void sr__store_link_fork_begin(sr__store_link *l);
void sr__store_link_fork_end(sr__store_link *l);

#ifdef __cplusplus
}
#endif
#endif
