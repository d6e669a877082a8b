# The build's layout, read from what it compiled ($BUILD/compile_commands.json) and the objects
# (nm): every source is compiled into one target only (what two programs share is one library's,
# CMakeLists.txt "shardrun_common"), and no folder's files call each other in a loop (a.c calls what
# b.c defines, which calls back into a.c, directly or through others; the product's folders: core/*,
# models/*, tools/*, examples/*, selftest/).  The exception: a test's
# fault build (a *TEST_FAULT* macro on its command line) compiles sources again, wrong on purpose.
# Both failed before the second renovation of the tree: 41 second copies in the normal build (json.c, safetensors.c,
# alloc.c, the layers...), and loops in models/transformer (lm_setup.c <-> lm_task.c through
# tf__lm_error and tf__lm_eval; tokenizer.c <-> tokenizer_regex.c through their shared error helper).
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || { fail "no $PY"; done_checks; exit 1; }
command -v nm >/dev/null || { fail "no nm (binutils)"; done_checks; exit 1; }
[ -f "$BUILD/compile_commands.json" ] || { fail "no $BUILD/compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS)"; done_checks; exit 1; }

run "$PY" - "$BUILD/compile_commands.json" "$SRC" <<'PY'
import json, os, re, shlex, subprocess, sys
db, src = json.load(open(sys.argv[1])), os.path.realpath(sys.argv[2])
objs, seen, twice = {}, {}, []
for e in db:
    cmd = e.get('command') or ' '.join(e['arguments'])
    if 'TEST_FAULT' in cmd:
        continue
    f = os.path.realpath(os.path.join(e['directory'], e['file']))
    rel = os.path.relpath(f, src)
    args = shlex.split(cmd)
    out = e.get('output') or (args[args.index('-o') + 1] if '-o' in args else None)
    if rel in seen:
        twice.append(rel)
        continue
    seen[rel] = out
    if out and rel.endswith(('.c', '.cc')) and rel.split('/')[0] in ('core', 'models', 'tools', 'examples', 'selftest'):
        objs[rel] = os.path.join(e['directory'], out)
for rel in sorted(set(twice)):
    print('compiled twice:', rel)
print('sources:', len(seen))
# per folder: an edge a -> b when a's object refers to a symbol b's object defines
defs, undefs, of = {}, {}, {}
for rel, o in objs.items():
    if not os.path.exists(o):
        print('missing object:', o)
        continue
    of[o], defs[rel], undefs[rel] = rel, set(), set()
# one nm for all (-A: each line starts with its object's path)
for line in subprocess.run(['nm', '-A'] + list(of), capture_output=True, text=True).stdout.splitlines():
    o, _, rest = line.partition(':')
    p = rest.split()
    if o not in of: continue
    if len(p) == 2 and p[0] == 'U': undefs[of[o]].add(p[1])
    elif len(p) == 3 and p[1] in 'TDRBCGSV': defs[of[o]].add(p[2])
by_dir = {}
for rel in defs: by_dir.setdefault(os.path.dirname(rel), []).append(rel)
loops = 0
for d, fs in sorted(by_dir.items()):
    owner = {s: f for f in fs for s in defs[f]}
    edges = {f: {owner[s] for s in undefs[f] if s in owner and owner[s] != f} for f in fs}
    idx, low, st, on, c = {}, {}, [], set(), [0]
    def sc(v):
        idx[v] = low[v] = c[0]; c[0] += 1; st.append(v); on.add(v)
        for w in edges[v]:
            if w not in idx: sc(w); low[v] = min(low[v], low[w])
            elif w in on: low[v] = min(low[v], idx[w])
        if low[v] == idx[v]:
            comp = []
            while True:
                w = st.pop(); on.discard(w); comp.append(w)
                if w == v: break
            if len(comp) > 1:
                global loops
                loops += 1
                print('loop:', ' <-> '.join(sorted(comp)))
    sys.setrecursionlimit(10000)
    for v in sorted(fs):
        if v not in idx: sc(v)
print('folders:', len(by_dir))
PY
expect_rc 0 "the layout check ran"
expect_in "$out" "sources: " "the build's sources were read"
n=$(sed -n 's/^sources: //p' <<<"$out")
[ "${n:-0}" -gt 100 ] && pass || fail "only ${n:-0} sources in compile_commands.json: the check would prove nothing"
twice=$(grep '^compiled twice:' <<<"$out")
[ -z "$twice" ] && pass || fail "sources compiled into two targets (a second program links the library that holds each):
$twice"
missing=$(grep '^missing object:' <<<"$out")
[ -z "$missing" ] && pass || fail "objects not built (build the whole tree first):
$missing"
loops=$(grep '^loop:' <<<"$out")
[ -z "$loops" ] && pass || fail "files of one folder calling each other in a loop (move what both call into a file of its own):
$loops"
done_checks
