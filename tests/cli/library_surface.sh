# libshardrun.so exports its public API and nothing else: every dynamic symbol it defines is an
# sr_ function declared with SR_API in include/shardrun/*.h, and every such declaration is exported.
. "$(dirname "$0")/lib.sh"
lib=$BUILD/libshardrun.so
[ -f "$lib" ] || { echo "FAIL: no $lib; build first"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: no nm (binutils) to read $lib"; exit 1; }

# defined dynamic symbols; the linker's own (_init, _fini, __bss_start, _edata, _end) and version
# nodes (type A, value 0) are not the library's
nm -D --defined-only "$lib" >"$T/nm" || { echo "FAIL: nm -D $lib"; exit 1; }
awk '$2 != "A" { print $3 }' "$T/nm" | sed 's/@.*//' |
    grep -vxE '_init|_fini|__bss_start|_edata|_end' | sort -u >"$T/exported"
expect_eq "$(grep -c . "$T/exported")" "$(grep -c '^sr_[a-z]' "$T/exported")" \
    "every exported symbol starts with sr_ and a letter (not sr__); the others: $(grep -v '^sr_[a-z]' "$T/exported" | head -20 | tr '\n' ' ')"

# SR_API declarations: "SR_API <type> [*]name(" at the start of a line, in every public header
sed -n 's/^SR_API [^(]*[^a-zA-Z0-9_(]\(sr_[a-zA-Z0-9_]*\)(.*/\1/p' "$SRC"/include/shardrun/*.h | sort -u >"$T/declared"
[ -s "$T/declared" ] && pass || fail "no SR_API declaration found in $SRC/include/shardrun/*.h"
expect_eq "$(comm -23 "$T/declared" "$T/exported" | tr '\n' ' ')" "" "SR_API functions the library does not export"
expect_eq "$(comm -13 "$T/declared" "$T/exported" | tr '\n' ' ')" "" "exported symbols no header declares with SR_API"
# a declaration of a public function without SR_API would be hidden: none may be left
expect_eq "$(grep -hE '^(const )?[a-z_]+ \**sr_[a-z0-9_]+\(' "$SRC"/include/shardrun/*.h | tr '\n' ' ')" "" \
    "function declarations in include/shardrun/*.h without SR_API"
grep -qx sr_main "$T/exported" && pass || fail "sr_main (shardrun/main.h, the executable's entry point) is not exported"
# the executable takes it from libshardrun.so, whose code it runs: one copy of the runtime per process
nm -D --undefined-only "$SHARDRUN" | awk '{ print $2 }' | sed 's/@.*//' >"$T/exe_undef"
grep -qx sr_main "$T/exe_undef" && pass || fail "$SHARDRUN does not take sr_main from libshardrun.so"
# libshardrun_cuda.so, when built, needs nothing of libshardrun but the public API
if [ -f "$BUILD/libshardrun_cuda.so" ]; then
    nm -D --undefined-only "$BUILD/libshardrun_cuda.so" | awk '{ print $2 }' | sed 's/@.*//' | grep '^sr_' |
        sort -u >"$T/cuda_undef"
    expect_eq "$(comm -23 "$T/cuda_undef" "$T/exported" | tr '\n' ' ')" "" \
        "symbols libshardrun_cuda.so needs that libshardrun.so does not export"
fi
done_checks
