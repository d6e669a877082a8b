# torch.distributed (Gloo) peer of pgbench for bench/pg_vs_torch.sh; run under torchrun.
# Usage: pg_torch_peer.py OUT_FILE SIZE_BYTES:ITERS...
# For each size S (fp32, nccl-tests sizes as in pgbench): list all_gather whose output is N tensors
# of S/N bytes, then all_reduce of an S-byte tensor.  1 warm-up, barrier, ITERS timed calls; the time
# is the slowest rank's (all_reduce MAX).  Rank 0 writes "S op time_us algbw_GBps" lines to OUT_FILE
# (a file, because torchrun's --tee interleaves the ranks' output).
import sys, time
import torch
import torch.distributed as dist

out_file, runs = sys.argv[1], [tuple(map(int, a.split(":"))) for a in sys.argv[2:]]
dist.init_process_group("gloo")
rank, n = dist.get_rank(), dist.get_world_size()
lines = []
for size, iters in runs:
    count = size // 4 // n * n  # whole chunks per rank, as pgbench
    nbytes = count * 4
    send = torch.full((count // n,), float(rank + 1))
    gathered = [torch.empty(count // n) for _ in range(n)]
    buf = torch.ones(count)
    for op, call in (("all_gather", lambda: dist.all_gather(gathered, send)),
                     ("all_reduce", lambda: dist.all_reduce(buf))):
        call()  # warm-up
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        dt = torch.tensor([(time.perf_counter() - t0) / iters], dtype=torch.float64)
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        lines.append(f"{nbytes} {op} {dt.item() * 1e6:.1f} {nbytes / dt.item() / 1e9:.4f}\n")
if rank == 0:
    with open(out_file, "w") as f:
        f.writelines(lines)
dist.destroy_process_group()
