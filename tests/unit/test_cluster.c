/* Cluster detection from launcher variables (torchrun, Slurm, Open MPI, PMI). */
#include <stdlib.h>

#include "check.h"
#include "config/cluster.h"

static const char *const *fake; /* NAME, VALUE, ..., NULL */

static const char *fake_getenv(const char *name) {
    for (const char *const *p = fake; *p; p += 2)
        if (!strcmp(p[0], name)) return p[1];
    return NULL;
}

static void detect(sr__cluster *c, const char *const *vars) {
    fake = vars;
    sr__cluster_detect(c, fake_getenv);
}

int main(void) {
    sr__cluster c;
    char host[64];
    CHECK(sr__slurm_first_host("gpu[07-09,12],cpu1", host, sizeof host) == 0);
    CHECK_STR(host, "gpu07");
    CHECK(sr__slurm_first_host("node1,node2", host, sizeof host) == 0);
    CHECK_STR(host, "node1");
    CHECK(sr__slurm_first_host("n[001]", host, sizeof host) == 0);
    CHECK_STR(host, "n001");
    CHECK(sr__slurm_first_host("n[", host, sizeof host) < 0);
    CHECK(sr__slurm_first_host("", host, sizeof host) < 0);

    const char *none[] = {NULL};
    detect(&c, none);
    CHECK(c.source == NULL);

    const char *tr[] = {
        "RANK", "5",           "WORLD_SIZE", "8",           "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "4", "GROUP_RANK",
        "1",    "MASTER_ADDR", "h0",         "MASTER_PORT", "1234",       NULL};
    detect(&c, tr);
    CHECK_STR(c.source, "torchrun");
    CHECK(c.per_process && c.rank == 5 && c.world_size == 8 && c.local_rank == 1 && c.local_world_size == 4);
    CHECK(c.node_rank == 1 && c.nnodes == 2 && c.master_port == 1234);
    CHECK_STR(c.master_addr, "h0");

    /* srun step, 2 nodes x 2 tasks */
    const char *srun[] = {"SLURM_PROCID",
                          "3",
                          "SLURM_NTASKS",
                          "4",
                          "SLURM_LOCALID",
                          "1",
                          "SLURM_NODEID",
                          "1",
                          "SLURM_NNODES",
                          "2",
                          "SLURM_STEP_ID",
                          "0",
                          "SLURM_JOB_NODELIST",
                          "gpu[3-4]",
                          NULL};
    detect(&c, srun);
    CHECK_STR(c.source, "Slurm");
    CHECK(c.per_process && c.rank == 3 && c.local_rank == 1 && c.local_world_size == 2 && c.node_rank == 1);
    CHECK_STR(c.master_addr, "gpu3");
    CHECK(c.error[0] == 0);

    /* one task per node: node mode */
    const char *node_mode[] = {"SLURM_PROCID",
                               "1",
                               "SLURM_NTASKS",
                               "2",
                               "SLURM_LOCALID",
                               "0",
                               "SLURM_NODEID",
                               "1",
                               "SLURM_NNODES",
                               "2",
                               "SLURM_STEP_ID",
                               "0",
                               "SLURM_JOB_NODELIST",
                               "a,b",
                               NULL};
    detect(&c, node_mode);
    CHECK(!c.per_process && c.node_rank == 1 && c.nnodes == 2);
    CHECK_STR(c.master_addr, "a");

    /* batch script (no step): node mode even with several tasks */
    const char *batch[] = {"SLURM_PROCID",
                           "0",
                           "SLURM_NTASKS",
                           "8",
                           "SLURM_LOCALID",
                           "0",
                           "SLURM_NODEID",
                           "0",
                           "SLURM_NNODES",
                           "2",
                           "SLURM_JOB_NODELIST",
                           "x[1-2]",
                           NULL};
    detect(&c, batch);
    CHECK(!c.per_process && c.nnodes == 2);

    const char *uneven[] = {"SLURM_PROCID",
                            "0",
                            "SLURM_NTASKS",
                            "3",
                            "SLURM_LOCALID",
                            "0",
                            "SLURM_NODEID",
                            "0",
                            "SLURM_NNODES",
                            "2",
                            "SLURM_STEP_ID",
                            "0",
                            NULL};
    detect(&c, uneven);
    CHECK(c.error[0] != 0);

    const char *ompi[] = {"OMPI_COMM_WORLD_RANK",
                          "2",
                          "OMPI_COMM_WORLD_SIZE",
                          "4",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "0",
                          "OMPI_COMM_WORLD_LOCAL_SIZE",
                          "2",
                          NULL};
    detect(&c, ompi);
    CHECK_STR(c.source, "Open MPI");
    CHECK(c.per_process && c.node_rank == 1 && c.nnodes == 2 && c.local_rank == 0);

    const char *pmi[] = {"PMI_RANK", "1", "PMI_SIZE", "3", NULL};
    detect(&c, pmi);
    CHECK_STR(c.source, "PMI");
    CHECK(c.per_process && c.local_rank == 1 && c.local_world_size == 3 && c.nnodes == 1);

    const char *garbage[] = {"RANK", "x", "WORLD_SIZE", "2", "LOCAL_RANK", "0", NULL};
    detect(&c, garbage);
    CHECK(strstr(c.error, "RANK=\"x\"") != NULL);

    /* sizes of 0 (a division by zero before), ranks out of range, local layouts that do not
       divide the world: each an error naming the variable, never a layout */
    const char *pmi0[] = {"PMI_RANK", "0", "PMI_SIZE", "0", NULL};
    detect(&c, pmi0);
    CHECK(strstr(c.error, "PMI_SIZE=\"0\" is not a number of processes") != NULL);
    const char *ompi0[] = {"OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "0", NULL};
    detect(&c, ompi0);
    CHECK(strstr(c.error, "OMPI_COMM_WORLD_SIZE=\"0\"") != NULL);
    const char *ompi_l0[] = {"OMPI_COMM_WORLD_RANK",
                             "1",
                             "OMPI_COMM_WORLD_SIZE",
                             "2",
                             "OMPI_COMM_WORLD_LOCAL_RANK",
                             "0",
                             "OMPI_COMM_WORLD_LOCAL_SIZE",
                             "0",
                             NULL};
    detect(&c, ompi_l0);
    CHECK(strstr(c.error, "OMPI_COMM_WORLD_LOCAL_SIZE=\"0\"") != NULL);
    const char *tr0[] = {"RANK", "1", "WORLD_SIZE", "0", "LOCAL_RANK", "1", NULL};
    detect(&c, tr0);
    CHECK_STR(c.source, "torchrun");
    CHECK(strstr(c.error, "WORLD_SIZE=\"0\"") != NULL);
    const char *tr_rank[] = {"RANK", "4", "WORLD_SIZE", "4", "LOCAL_RANK", "0", NULL};
    detect(&c, tr_rank);
    CHECK(strstr(c.error, "RANK=4 is not below WORLD_SIZE=4") != NULL);
    const char *tr_div[] = {"RANK", "0", "WORLD_SIZE", "6", "LOCAL_RANK", "0", "LOCAL_WORLD_SIZE", "4", NULL};
    detect(&c, tr_div);
    CHECK(strstr(c.error, "WORLD_SIZE=6 is not a multiple of LOCAL_WORLD_SIZE=4") != NULL);
    const char *tr_big[] = {"RANK", "0", "WORLD_SIZE", "99999999999999999999", "LOCAL_RANK", "0", NULL};
    detect(&c, tr_big);
    CHECK(strstr(c.error, "WORLD_SIZE=\"99999999999999999999\"") != NULL);
    const char *tr_local[] = {"RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "2", NULL};
    detect(&c, tr_local);
    CHECK(strstr(c.error, "LOCAL_RANK=2 is not below WORLD_SIZE=2 (without LOCAL_WORLD_SIZE") != NULL);
    const char *slurm0[] = {"SLURM_PROCID", "0", "SLURM_NODEID", "0", "SLURM_NNODES", "0", NULL};
    detect(&c, slurm0);
    CHECK(strstr(c.error, "SLURM_NNODES=\"0\"") != NULL);
    /* some torchrun variables without the others: no launcher, but said so */
    const char *partial[] = {"RANK", "1", "WORLD_SIZE", "2", NULL};
    detect(&c, partial);
    CHECK(c.source == NULL && c.error[0] == 0);
    CHECK_STR(c.partial, "RANK and WORLD_SIZE are set but LOCAL_RANK is not");
    const char *partial_slurm[] = {"LOCAL_RANK", "0", "SLURM_PROCID", "0", "SLURM_NODEID", "0", "SLURM_NNODES",
                                   "1",          NULL};
    detect(&c, partial_slurm);
    CHECK_STR(c.source, "Slurm");
    CHECK(c.partial[0] == 0 && c.error[0] == 0);
    return CHECK_DONE();
}
