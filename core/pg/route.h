/* Which address this host advertises to the other nodes for Gloo (core/run/host.c asks, before
   the world group is created, when master_addr is not a loopback address and GLOO_SOCKET_IFNAME
   is unset).  As NCCL's bootstrap does: the source address of this host's route to master_addr
   (a UDP socket connected to it, then getsockname; no packet is sent), and the interface that
   holds it.  The host name is not used: it may resolve to a loopback address (Debian's
   `127.0.1.1 hostname` in /etc/hosts), which another node cannot reach. */
#ifndef SR__CORE_PG_ROUTE_H
#define SR__CORE_PG_ROUTE_H

#include <stddef.h>

/* 0: addr (numeric), ifname ("" when no interface holds it) and master (master_addr resolved,
   numeric) filled; -1: err says why. */
int sr__pg_route_to(const char *master_addr, int master_port, char *addr, size_t alen, char *ifname, size_t iflen,
                    char *master, size_t mlen, char *err, size_t errlen);
/* 1 when the numeric address is a loopback one (127.0.0.0/8, ::1, ::ffff:127.x) */
int sr__pg_is_loopback_addr(const char *addr);

#endif
