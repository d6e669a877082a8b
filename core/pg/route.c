/* The address that reaches master_addr (see route.h). */
#define _GNU_SOURCE
#include "pg/route.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int sr__pg_is_loopback_addr(const char *addr) {
    return !strncmp(addr, "127.", 4) || !strcmp(addr, "::1") || !strncmp(addr, "::ffff:127.", 11);
}

static int same_addr(const struct sockaddr *a, const struct sockaddr *b) {
    if (!a || !b || a->sa_family != b->sa_family) return 0;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                       sizeof(struct in6_addr));
    return 0;
}

int sr__pg_route_to(const char *master_addr, int master_port, char *addr, size_t alen, char *ifname, size_t iflen,
                    char *master, size_t mlen, char *err, size_t errlen) {
    char port[16];
    snprintf(port, sizeof port, "%d", master_port > 0 ? master_port : 9);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    int grc = getaddrinfo(master_addr, port, &hints, &res);
    if (grc != 0) {
        snprintf(err, errlen, "cannot resolve master_addr %s: %s", master_addr, gai_strerror(grc));
        return -1;
    }
    int rc = -1, last_errno = 0;
    struct sockaddr_storage me;
    socklen_t melen = sizeof me;
    for (struct addrinfo *ai = res; ai && rc != 0; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            last_errno = errno;
            continue;
        }
        melen = sizeof me;
        /* connect() on a UDP socket only picks the route and the source address: nothing is sent */
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 && getsockname(fd, (struct sockaddr *)&me, &melen) == 0) {
            rc = 0;
            if (getnameinfo(ai->ai_addr, ai->ai_addrlen, master, (socklen_t)mlen, NULL, 0, NI_NUMERICHOST) != 0)
                snprintf(master, mlen, "%s", master_addr);
        } else last_errno = errno;
        close(fd);
    }
    freeaddrinfo(res);
    if (rc != 0) {
        snprintf(err, errlen, "no route from this host to master_addr %s: %s", master_addr, strerror(last_errno));
        return -1;
    }
    if (getnameinfo((struct sockaddr *)&me, melen, addr, (socklen_t)alen, NULL, 0, NI_NUMERICHOST) != 0) {
        snprintf(err, errlen, "the route to master_addr %s has a source address that cannot be printed", master_addr);
        return -1;
    }
    ifname[0] = 0;
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) == 0) {
        for (struct ifaddrs *i = ifs; i && !ifname[0]; i = i->ifa_next)
            if (same_addr(i->ifa_addr, (struct sockaddr *)&me)) snprintf(ifname, iflen, "%s", i->ifa_name);
        freeifaddrs(ifs);
    }
    return 0;
}
