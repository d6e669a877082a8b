#!/usr/bin/env bash
# The Debian packages as a user gets them (run by .ci/run, as root, on a fresh machine):
# `cpack -G DEB` of a build for /usr with Debian's flags as debhelper sets them (dpkg-buildflags,
# CMAKE_BUILD_TYPE=None; warnings are errors, so this is also the packager matrix's GCC build), `apt-get install ./shardrun_*.deb ./shardrun-dev_*.deb`
# (apt pulls the runtime dependencies), `shardrun selftest --quick` from the installed package, then
# the three SDK examples as installed under /usr/share/shardrun/examples/sdk, built against the
# package with pkg-config and with CMake and run from an unrelated folder, every example job file the
# package ships (its task installed, the CPU ones run: tests/installed_examples.sh); the packages are removed
# at the end.  Nothing here points into a build tree.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
build=build-deb
rm -rf "$build"
. .ci/debian_flags.sh
(
    debian_flags gcc
    echo ".ci/deb.sh: CFLAGS='$CFLAGS' CXXFLAGS='$CXXFLAGS' LDFLAGS='$LDFLAGS'"
    set -x
    CC=gcc CXX=g++ cmake -S . -B "$build" -DSHARDRUN_WERROR=ON -DSHARDRUN_CUDA=OFF -DCMAKE_BUILD_TYPE=None -DCMAKE_INSTALL_PREFIX=/usr
    cmake --build "$build" -j2
    # what the packages ship exports its entry points only, as in the tested build
    for t in library_surface naming; do BUILD=$build bash tests/cli/$t.sh; done
    cd "$build" && cpack -G DEB
)
debs=$(ls "$PWD/$build"/shardrun_*.deb "$PWD/$build"/shardrun-dev_*.deb)
trap 'apt-get remove -y shardrun shardrun-dev >/dev/null 2>&1 || true' EXIT
DEBIAN_FRONTEND=noninteractive apt-get install -y $debs
work=$(mktemp -d)
cp -r /usr/share/shardrun/examples/sdk "$work/sdk"
mkdir "$work/elsewhere"
cd "$work/elsewhere"
(
    set -x
    command -v shardrun
    shardrun --version
    shardrun selftest --quick
    make -C ../sdk/main_task
    shardrun ../sdk/main_task/job.ini
    cmake -S ../sdk/model_task -B ../sdk/model_task/build
    cmake --build ../sdk/model_task/build
    shardrun ../sdk/model_task/job.ini
    make -C ../sdk/plugin
    shardrun ../sdk/plugin/job.ini
    shardrun /usr/share/shardrun/examples/hello/hello.ini
    bash "$repo/tests/installed_examples.sh" /usr/bin/shardrun /usr/share/shardrun/examples \
        "$(pkg-config --variable=tasksdir shardrun)"
    shardrun prepare -o ./lic --val-tokens 1000 --progress none /usr/share/common-licenses/GPL-3
    ls lic_val_000000.bin lic_train_000001.bin
) >"$work/log" 2>&1 || { cat "$work/log"; echo ".ci/deb.sh: FAILED (log above)" >&2; exit 1; }
grep -q "pi is about 3.1415926535" "$work/log" || { cat "$work/log"; echo ".ci/deb.sh: the main task's result is missing" >&2; exit 1; }
grep -q "rank 1: tag baseline, seed 101" "$work/log" || { cat "$work/log"; echo ".ci/deb.sh: the plugin's variables are missing" >&2; exit 1; }
grep -q "^prepared .* tokens from 1 documents" "$work/log" || { cat "$work/log"; echo ".ci/deb.sh: shardrun prepare's line is missing" >&2; exit 1; }
rm -rf "$work"
echo ".ci/deb.sh: the packages install, selftest --quick passes, every example job file's task is installed and the CPU ones run, the SDK examples build and run against them, shardrun prepare writes shards"
