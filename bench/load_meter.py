"""The CPU time other processes used while a benchmark ran, in cores: other work on the machine
shows up directly in its numbers, so every benchmark prints this next to them.

    from load_meter import LoadMeter
    meter = LoadMeter()          # at the start
    ...                          # run the benchmark's children (subprocess)
    meter.wall(), meter.other_cores()

busy time comes from /proc/stat (not idle, not iowait); ours is the finished children's rusage."""
import os
import resource
import time


def _busy_s():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return (sum(f[:8]) - f[3] - f[4]) / os.sysconf("SC_CLK_TCK")


def _ours_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class LoadMeter:
    def __init__(self):
        self.t0, self.busy0, self.ours0 = time.perf_counter(), _busy_s(), _ours_s()

    def wall(self):
        return time.perf_counter() - self.t0

    def other_cores(self):
        return max(0.0, (_busy_s() - self.busy0) - (_ours_s() - self.ours0)) / self.wall()
