/*
 * `shardrun selftest`: the runtime's own check of a machine, with no job file.
 *
 * Lifecycle: sr__cmd_selftest() parses its flags -> for each half (CPU always; GPU when a CUDA
 * device is visible or --gpu asks for it) runs the selftest task (examples/selftest.so) as an
 * ordinary run of a job it writes into a temporary folder, then the FSDP step comparison
 * (selftest_fsdp.c: GPT-2 runs whose checkpoints are compared) -> merges every rank's lines,
 * prints PASS/FAIL per line and a verdict, writes --results FILE -> removes the folder.
 */
#ifndef SR__AGENT_SELFTEST_H
#define SR__AGENT_SELFTEST_H

/* Its files, each with one job; the command includes the parts' headers, no part includes the
   command's or calls into it (no loop):
     selftest_cmd.c     this command: flags, the two halves, the table, the verdict, --results
     selftest_lines.h   the merged lines every part adds to
     selftest_subrun.h  sub-runs of `shardrun JOB`, and the signals that stop them
     selftest_fsdp.h    the FSDP step comparison */
int sr__cmd_selftest(int argc, char **argv);

#endif
