# Sourced by .ci/run and .ci/deb.sh.
# Debian's flags as debhelper hands them to CMake: CFLAGS, CXXFLAGS and LDFLAGS in the environment,
# CPPFLAGS (which CMake does not read) appended to CFLAGS and CXXFLAGS.  dpkg-buildflags chooses
# them for GCC; building with Clang (debian_flags clang), a flag Clang rejects is left out, and
# said so (none is, as of dpkg 1.21 and Clang 14).
debian_flags() {
    local for_clang=$1 var flag kept cc lang
    eval "$(dpkg-buildflags --export=sh)"
    CFLAGS="$CFLAGS $CPPFLAGS"
    CXXFLAGS="$CXXFLAGS $CPPFLAGS"
    if [ "$for_clang" = clang ]; then
        for var in CFLAGS CXXFLAGS LDFLAGS; do
            if [ "$var" = CXXFLAGS ]; then cc=clang++ lang=c++; else cc=clang lang=c; fi
            kept=""
            for flag in ${!var}; do
                # compiled and linked with optimisation (-D_FORTIFY_SOURCE wants it), any warning fatal
                if echo 'int main(void) { return 0; }' | "$cc" -O2 -Werror -x "$lang" - -o /dev/null "$flag" \
                    >/dev/null 2>&1; then
                    kept="$kept $flag"
                else
                    echo ".ci/run: WARNING: $cc rejects $var flag '$flag' of dpkg-buildflags; building without it" >&2
                fi
            done
            printf -v "$var" '%s' "${kept# }"
        done
    fi
    export CFLAGS CXXFLAGS LDFLAGS
}
