#define _GNU_SOURCE
#include "base/rand.h"

#include "base/hash64.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

uint64_t sr__mix64(uint64_t x) { /* splitmix64's finaliser: a bijection with good avalanche */
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t sr__hash_str(const char *s) { return sr__fnv1a64_str(SR__FNV1A64_BASIS, s); }

void sr__random_bytes(unsigned char *b, size_t n) {
    memset(b, 0x5a, n); /* only if /dev/urandom fails, which Linux does not let happen */
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, b, n) != (ssize_t)n) memset(b, 0x5a, n);
        close(fd);
    }
}
