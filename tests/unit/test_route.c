/* The address Gloo advertises (pg/route.h): the route to a loopback master_addr comes from a
   loopback address on the loopback interface, and is named loopback; a master_addr that does not
   resolve is an error that names it.  (Over a real link: tests/links/demo.sh.) */
#include <string.h>

#include "check.h"
#include "pg/route.h"

int main(void) {
    char addr[128], ifname[64], master[128], err[512];
    CHECK(sr__pg_route_to("127.0.0.1", 29500, addr, sizeof addr, ifname, sizeof ifname, master, sizeof master, err,
                          sizeof err) == 0);
    CHECK_STR(addr, "127.0.0.1");
    CHECK_STR(master, "127.0.0.1");
    CHECK(sr__pg_is_loopback_addr(addr));
    CHECK(ifname[0] != 0); /* the loopback interface, whatever its name */
    CHECK(sr__pg_route_to("no-such-host.invalid", 29500, addr, sizeof addr, ifname, sizeof ifname, master,
                          sizeof master, err, sizeof err) == -1);
    CHECK(strstr(err, "no-such-host.invalid") != NULL);
    CHECK(sr__pg_is_loopback_addr("127.0.1.1") && sr__pg_is_loopback_addr("::1") &&
          sr__pg_is_loopback_addr("::ffff:127.0.0.1"));
    CHECK(!sr__pg_is_loopback_addr("10.201.0.1") && !sr__pg_is_loopback_addr("fe80::1"));
    return CHECK_DONE();
}
