/* The agent's sweep of shared-memory segments (pg/shm.h): after an attempt it unlinks the run's
   segments whose creator is dead (a worker killed while its group was being created), and keeps
   those of live processes (another agent's worker may be mapping it right now) and of other runs. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "pg/shm.h"

static int make(const char *name) {
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

static int exists(const char *name) {
    int fd = shm_open(name, O_RDONLY, 0);
    if (fd >= 0) close(fd);
    return fd >= 0;
}

int main(void) {
    char token[64], other[64];
    snprintf(token, sizeof token, "sweep-test-%ld", (long)getpid());
    snprintf(other, sizeof other, "sweep-other-%ld", (long)getpid());
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0); /* a pid whose process is gone */
    char dead[160], live[160], foreign[160];
    snprintf(dead, sizeof dead, "/shardrun.%016llx.a0.0123456789abcdef.1.%ld", sr__shm_run_hash(token), (long)child);
    snprintf(live, sizeof live, "/shardrun.%016llx.a0.0123456789abcdef.0.%ld", sr__shm_run_hash(token), (long)getpid());
    snprintf(foreign, sizeof foreign, "/shardrun.%016llx.a0.0123456789abcdef.1.%ld", sr__shm_run_hash(other),
             (long)child);
    CHECK(make(dead) == 0 && make(live) == 0 && make(foreign) == 0);
    CHECK(sr__shm_run_hash(token) != sr__shm_run_hash(other));
    CHECK(sr__shm_sweep(token) == 1);
    CHECK(!exists(dead));
    CHECK(exists(live));
    CHECK(exists(foreign));
    CHECK(sr__shm_sweep(other) == 1);
    CHECK(!exists(foreign));
    shm_unlink(live);
    CHECK(sr__shm_sweep(token) == 0);
    printf("shm_sweep: %d checks, %d failed\n", check_count, check_failures);
    return check_failures ? 1 : 0;
}
