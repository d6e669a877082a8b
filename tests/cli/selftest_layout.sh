# The selftest's sources (core/cli/selftest*): no loop between its files (one .c including a
# header that declares what another defines, which includes one declaring what the first defines),
# no sr__st_/sr_st_ name but safetensors' own (core/io/safetensors.h), and no folder remover of its
# own (core/base/fs.h has the one).  Each failed before issue 29's selftest renovation:
# selftest_cmd.c and selftest_fsdp.c called each other through selftest.h, with sr__st_add & co.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { fail "no $PY"; done_checks; exit 1; }

# loops: strongly connected groups of .c files, an edge A.c -> B.c when a header A.c includes
# (directly or through headers) declares an sr_/sr__ function B.c defines
loops=$("$PY" - "$SRC/core" <<'PY'
import os, re, sys
core = sys.argv[1]
files = {}
for d, _, fs in os.walk(core):
    for f in fs:
        if f.endswith(('.c', '.h', '.cc')):
            p = os.path.join(d, f)
            files[os.path.relpath(p, core)] = open(p, errors='replace').read()
inc = {p: [h for h in re.findall(r'^#include "([^"]+)"', s, re.M) if h in files] for p, s in files.items()}
decl_re = re.compile(r'^[A-Za-z_][\w \*]*?\b(sr_{1,2}\w+)\s*\([^;{]*?\)\s*(?:__attribute__\S*\s*)?;', re.M | re.S)
def_re = re.compile(r'^[A-Za-z_][\w \*]*?\b(sr_{1,2}\w+)\s*\([^;{]*?\)\s*\{', re.M | re.S)
defined = {}
for p, s in files.items():
    if not p.endswith('.h'):
        for n in def_re.findall(s):
            defined.setdefault(n, set()).add(p)
def headers(p, seen=None):
    seen = seen if seen is not None else set()
    for h in inc[p]:
        if h not in seen:
            seen.add(h); headers(h, seen)
    return seen
edges = {}
for p in files:
    if p.endswith('.h'): continue
    out = set()
    for h in headers(p):
        for n in decl_re.findall(files[h]):
            out |= {q for q in defined.get(n, ()) if q != p}
    edges[p] = out
# cycles: strongly connected components of more than one file
idx, low, st, on, comps, c = {}, {}, [], set(), [], [0]
sys.setrecursionlimit(100000)
def sc(v):
    idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
    for w in edges.get(v, ()):
        if w not in idx: sc(w); low[v] = min(low[v], low[w])
        elif w in on: low[v] = min(low[v], idx[w])
    if low[v] == idx[v]:
        comp = []
        while True:
            w = st.pop(); on.discard(w); comp.append(w)
            if w == v: break
        if len(comp) > 1: comps.append(sorted(comp))
for v in sorted(edges):
    if v not in idx: sc(v)
for comp in comps: print("loop:", " <-> ".join(comp))
PY
)
[ -n "$(ls "$SRC"/core/cli/selftest*.c 2>/dev/null)" ] && pass || fail "no core/cli/selftest*.c under $SRC"
expect_not_in "$loops" "cli/selftest" "no loop between the selftest's files"

# names: every sr__st_/sr_st_ name in core/ is one core/io/safetensors.h declares
used=$(grep -rhoE '\bsr_{1,2}st_[A-Za-z0-9_]+' "$SRC/core" | sort -u)
[ -n "$used" ] && pass || fail "no sr__st_ name found in core/ (the check would prove nothing)"
for n in $used; do
    grep -qw -- "$n" "$SRC/core/io/safetensors.h" || fail "$n: an sr__st_/sr_st_ name that is not safetensors' (core/io/safetensors.h)"
done
pass

# one folder remover: the selftest uses core/base/fs.h's
run grep -l 'nftw' "$SRC"/core/cli/selftest*
expect_eq "$out" "" "no nftw in core/cli/selftest* (base/fs.h's sr__remove_tree removes folders)"
done_checks
