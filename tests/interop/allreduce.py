# A real torch client: forms its Gloo process group from shardrun's environment alone (env://,
# exactly as under torchrun) and checks an all_reduce.
import datetime
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
assert rank == int(os.environ["RANK"]) and world == int(os.environ["WORLD_SIZE"]), (rank, world)
t = torch.tensor([float(rank + 1)])
dist.all_reduce(t)
assert t.item() == world * (world + 1) / 2, t
g = [torch.zeros(2) for _ in range(world)]
dist.all_gather(g, torch.tensor([float(rank), float(int(os.environ["LOCAL_RANK"]))]))
assert [x.tolist() for x in g] == [[float(r), float(r)] for r in range(world)], g
print(f"all_reduce ok: rank {rank} of {world} got {t.item():g}")
dist.destroy_process_group()
