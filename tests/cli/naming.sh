# Names (CONTRIBUTING.md, "Names"): the public prefix sr_ / SR_ belongs to the public API, what
# include/shardrun/*.h declares; every other name is sr__ / SR__ and stays inside its library.
#  (a) each library shardrun ships exports only its entry points (`nm -D --defined-only`):
#      libshardrun.so its SR_API functions, libshardrun_cuda.so (when built) shardrun_cuda_lib,
#      a plugin shardrun_plugin, a task shardrun_task, transformer_cuda.so tf_kernels_cuda;
#  (b) no C source of the tree (core/, plugins/, selftest/, models/, tools/, examples/, bench/,
#      tests/) uses an sr_ / SR_ name that include/shardrun/*.h does not have; comments and strings
#      are not code and are not read.
# The public names are read from the headers each time: nothing here lists them.
. "$(dirname "$0")/lib.sh"
cd "$SRC" || { echo "FAIL: cannot enter $SRC"; exit 1; }
command -v nm >/dev/null || { echo "FAIL: no nm (binutils), which lists the libraries' symbols"; exit 1; }
command -v perl >/dev/null || { echo "FAIL: no perl, which separates code from comments and strings"; exit 1; }

# ---- (a) what the shipped libraries export -------------------------------------------------------
# defined dynamic symbols; the linker's own (_init, _fini, __bss_start, _edata, _end), version nodes
# (type A) and, in the sanitizer build, AddressSanitizer's ODR indicators (__odr_asan.NAME, one
# beside each exported variable) are not the library's
exports() {
    nm -D --defined-only "$1" | awk '$2 != "A" { print $3 }' | sed 's/@.*//' |
        grep -vxE '_init|_fini|__bss_start|_edata|_end|__odr_asan[._].*' | sort -u
}
# define_of FILE MACRO: the string a header's #define gives MACRO (either prefix: SR_X or SR__X)
define_of() { sed -n "s/^#define SR__\{0,1\}$2 \"\([^\"]*\)\".*/\1/p" "$1" | head -1; }

sed -n 's/^SR_API [^(]*[^a-zA-Z0-9_(]\(sr_[a-zA-Z0-9_]*\)(.*/\1/p' include/shardrun/*.h | sort -u >"$T/sr_api"
[ -s "$T/sr_api" ] && pass || fail "no SR_API declaration found in $SRC/include/shardrun/*.h"
plugin_symbol=$(define_of include/shardrun/plugin.h PLUGIN_SYMBOL)
task_symbol=$(define_of include/shardrun/task.h TASK_SYMBOL)
cuda_symbol=$(define_of core/device/cuda_lib.h CUDA_LIB_SYMBOL)
[ -n "$plugin_symbol" ] && pass || fail "no #define SR_PLUGIN_SYMBOL \"...\" in include/shardrun/plugin.h"
[ -n "$task_symbol" ] && pass || fail "no #define SR_TASK_SYMBOL \"...\" in include/shardrun/task.h"
# transformer_cuda.so's entry, which the decoder tasks look up by name
kernels_symbol=tf_kernels_cuda
grep -q "dlsym(h, \"$kernels_symbol\")" models/transformer/lm_kernels.c && pass ||
    fail "models/transformer/lm_kernels.c no longer looks up $kernels_symbol in transformer_cuda.so: update this test"

# check_exports LIBRARY ALLOWED_FILE WHAT: LIBRARY exports nothing ALLOWED_FILE does not list
check_exports() {
    local lib=$1 allowed=$2 what=$3 extra
    if ! exports "$lib" >"$T/exported"; then
        fail "nm -D cannot read $lib"
        return
    fi
    extra=$(comm -23 "$T/exported" "$allowed")
    [ -z "$extra" ] && pass || fail "$lib exports $(grep -c . <<<"$extra") name(s) beyond $what:" \
        "$(head -20 <<<"$extra" | tr '\n' ' ')-- make them static or hidden (sr__, compiled with hidden" \
        "visibility), or keep them out with the library's version script"
}
# check_entry LIBRARY SYMBOL: LIBRARY exports its one entry SYMBOL, and nothing else
check_entry() {
    echo "$2" >"$T/allowed"
    check_exports "$1" "$T/allowed" "its entry $2"
    grep -qx "$2" "$T/exported" && pass || fail "$1 does not export its entry $2"
}

for required in libshardrun.so plugins/shardrun_torch.so plugins/shardrun_accelerate.so examples/hello.so \
    examples/pgbench.so examples/toy.so; do
    [ -f "$BUILD/$required" ] && pass || fail "no $BUILD/$required: build first"
done
libs=0
if [ -f "$BUILD/libshardrun.so" ]; then
    check_exports "$BUILD/libshardrun.so" "$T/sr_api" "the SR_API functions of include/shardrun/*.h"
    libs=$((libs + 1))
fi
if [ -f "$BUILD/libshardrun_cuda.so" ]; then
    [ -n "$cuda_symbol" ] && pass || fail "no #define SR__CUDA_LIB_SYMBOL \"...\" in core/device/cuda_lib.h"
    check_entry "$BUILD/libshardrun_cuda.so" "${cuda_symbol:-shardrun_cuda_lib}"
    libs=$((libs + 1))
fi
for lib in "$BUILD"/plugins/*.so; do
    [ -f "$lib" ] || continue
    check_entry "$lib" "$plugin_symbol"
    libs=$((libs + 1))
done
for lib in "$BUILD"/examples/*.so; do
    [ -f "$lib" ] || continue
    case $(basename "$lib") in
    transformer_cuda.so) check_entry "$lib" "$kernels_symbol" ;;
    *) check_entry "$lib" "$task_symbol" ;;
    esac
    libs=$((libs + 1))
done

# ---- (b) the public prefix in the sources ----------------------------------------------------------
# code_names FILE...: "file:line:name" for each sr_/SR_ identifier (not sr__/SR__) in the code of the
# files: comments become blank lines (the line numbers stay), string and character literals empty
code_names() {
    perl -e '
        for my $f (@ARGV) {
            open(my $fh, "<", $f) or die "cannot read $f: $!\n";
            local $/;
            my $text = <$fh>;
            $text =~ s{(/\*.*?\*/)|(//[^\n]*)|("(?:\\.|[^"\\\n])*")|(\x27(?:\\.|[^\x27\\\n])*\x27)}{
                defined $1 ? "\n" x (() = $1 =~ /\n/g) : defined $2 ? "" : defined $3 ? "\"\"" : "\x27\x27"
            }gse;
            my $line = 0;
            for (split /\n/, $text, -1) {
                $line++;
                print "$f:$line:$1\n" while /\b((?:sr|SR)_[A-Za-z0-9][A-Za-z0-9_]*)/g;
            }
        }' "$@"
}
code_names include/shardrun/*.h | sed 's/.*://' | sort -u >"$T/public"
[ -s "$T/public" ] && pass || fail "no sr_/SR_ name found in $SRC/include/shardrun/*.h"
find core plugins selftest models tools examples bench tests -type f \
    \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' \) | sort >"$T/files"
[ "$(grep -c . "$T/files")" -gt 100 ] && pass || fail "only $(grep -c . "$T/files") C sources found under $SRC"
if mapfile -t files <"$T/files" && code_names "${files[@]}" >"$T/used"; then pass; else fail "cannot read the sources"; fi
# the names include/shardrun/ does not have, each with where it is first used and how often
awk -F: 'NR == FNR { public[$1] = 1; next }
         !($3 in public) { if (!($3 in first)) { first[$3] = $1 ":" $2; order[++n] = $3 } count[$3]++ }
         END { for (i = 1; i <= n; i++)
                   printf("  %-40s %s (%d use%s)\n", order[i], first[order[i]], count[order[i]],
                          (count[order[i]] > 1) ? "s" : "") }' \
    "$T/public" "$T/used" | sort >"$T/internal"
if [ -s "$T/internal" ]; then
    n=$(grep -c . "$T/internal")
    fail "$n name(s) carry the public prefix sr_/SR_ but are not in include/shardrun/*.h (the public API):"
    head -20 "$T/internal"
    [ "$n" -gt 20 ] && echo "  ... and $((n - 20)) more (the first use of each is named)"
    echo "  An internal name is sr__ / SR__ (CONTRIBUTING.md, \"Names\"): rename it everywhere it appears."
    echo "  A name meant to be public API is declared in include/shardrun/ instead (a change to the API)."
else
    pass
fi
echo "naming: $libs libraries' exports checked; $(grep -c . "$T/files") sources, $(grep -c . "$T/public") public names"
done_checks
