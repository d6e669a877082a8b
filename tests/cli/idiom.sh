# The error idiom of core/ and selftest/ (CONTRIBUTING.md, "Out of memory"), kept by the build and
# by this check:
#  - memory only through core/base/alloc.h (sr__malloc, sr__calloc, sr__realloc, sr__strdup,
#    sr__strndup, sr__fmt, sr__aligned_alloc), where a test can fail any allocation; no plain
#    malloc, calloc, realloc, strdup, strndup, asprintf, vasprintf, aligned_alloc, posix_memalign;
#  - no exit()/_exit() below the command layer: a lower layer returns its error.  The exceptions
#    are the command layer itself and the processes shardrun forks, which end with _exit();
#  - ignoring what an allocation returns does not compile (SR__MUST_USE: warn_unused_result, an
#    error under -Werror).
. "$(dirname "$0")/lib.sh"
cd "$SRC" || { echo "FAIL: cannot enter $SRC"; exit 1; }

# The files that may call exit()/_exit(), and why.
EXIT_ALLOWED='
core/cli/main.c            the executable: its exit code
core/cli/cli.c             the command layer
core/cli/cmd_*.c           the command layer (one command each)
core/agent/guardian.c      a forked process: ends with _exit()
core/cli/key_probe.c       a forked process: ends with _exit()
core/cli/selftest_subrun.c    the child between fork and exec
core/agent/supervisor.c    the child between fork and prctl
core/worker/worker.c       the worker process (forked): ends with _exit()
core/run/task_probe.c      a forked process: ends with _exit()
'
ALLOC_ALLOWED='core/base/alloc.h core/base/alloc.c'

command -v gcc >/dev/null || { echo "FAIL: no gcc, which strips the comments before the scan"; exit 1; }
files=$(find core selftest -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name '*.cu' \) | sort)
[ -n "$files" ] || { echo "FAIL: no source files under $SRC/core and $SRC/selftest"; exit 1; }
ALLOC_RE='(^|[^_a-zA-Z0-9.>])(malloc|calloc|realloc|strdup|strndup|v?asprintf|aligned_alloc|posix_memalign)[[:space:]]*\('
EXIT_RE='(^|[^_a-zA-Z0-9.>])(exit|_exit|_Exit|quick_exit)[[:space:]]*\('
nfiles=0
for f in $files; do
    nfiles=$((nfiles + 1))
    check_alloc=1 check_exit=1
    case " $ALLOC_ALLOWED " in *" $f "*) check_alloc=0 ;; esac
    while read -r pattern _; do
        [ -n "$pattern" ] || continue
        # shellcheck disable=SC2254
        case $f in $pattern) check_exit=0 ;; esac
    done <<<"$EXIT_ALLOWED"
    # the code without its comments (gcc's preprocessor, no macro expansion: a comment may name
    # malloc()), for the files where the text has a candidate at all
    cp "$f" "$T/code"
    if grep -qE "$ALLOC_RE|$EXIT_RE" "$f"; then
        case $f in *.cc | *.cu) lang=c++ ;; *) lang=c ;; esac
        if ! gcc -x "$lang" -fpreprocessed -dD -E -P "$f" >"$T/code" 2>"$T/cpp_err"; then
            fail "cannot strip the comments of $f: $(head -3 "$T/cpp_err")"
            continue
        fi
    fi
    if [ "$check_alloc" = 1 ]; then
        hits=$(grep -E "$ALLOC_RE" "$T/code" | sed "s/^[[:space:]]*//" | head -5)
        [ -z "$hits" ] && pass || fail "$f allocates around core/base/alloc.h (use its sr__ helpers, which tests can fail): $hits"
    fi
    if [ "$check_exit" = 1 ]; then
        hits=$(grep -E "$EXIT_RE" "$T/code" | sed "s/^[[:space:]]*//" | head -5)
        [ -z "$hits" ] && pass || fail "$f exits below the command layer (return the error to the caller instead): $hits"
    fi
done
# the scan saw the tree: the files it must cover are there
[ "$nfiles" -gt 100 ] && pass || fail "only $nfiles source files scanned under core/ and selftest/"

# SR__MUST_USE holds: a discarded allocation is a compile error under -Werror, a tested one compiles
CC=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$BUILD/CMakeCache.txt")
[ -n "$CC" ] && [ -x "$CC" ] || CC=cc
cat >"$T/drop.c" <<'EOF'
#include "base/alloc.h"
void f(void);
void f(void) { sr__malloc(8); }
EOF
cat >"$T/keep.c" <<'EOF'
#include "base/alloc.h"
int f(void);
int f(void) {
    char *p = sr__fmt("%d", 8);
    int ok = p != NULL;
    free(p);
    return ok;
}
EOF
run "$CC" -std=c11 -Wall -Werror -I"$SRC/core" -c "$T/drop.c" -o "$T/drop.o"
[ "$rc" -ne 0 ] && pass || fail "a discarded sr__malloc() compiled under -Werror: SR__MUST_USE is lost"
expect_in "$err" "unused" "the compiler names the ignored result"
run "$CC" -std=c11 -Wall -Werror -I"$SRC/core" -c "$T/keep.c" -o "$T/keep.o"
expect_rc 0 "a checked sr__fmt() compiles"
done_checks
