# The test suite's one registration function and its shared environment (CONTRIBUTING.md, "Test").
#
#   sr_test(NAME TIER quick|behaviour|reference|system [SERIAL|DEADLINE] [TIMEOUT SECONDS]
#           [ENV VAR=VALUE...] COMMAND command [args...])
#
# TIER becomes the test's ctest label, so `ctest -L '^quick$'` runs one tier and tests/tiers.sh runs
# them in turn, timing each:
#   quick      unit tests, configuration and error paths, the contracts a subsystem promises at its
#              boundary: seconds each, the whole tier in under two minutes (run it after every change)
#   behaviour  multi-process runs of the toy and tiny models: parity, checkpoints, restarts, hangs, data,
#              LoRA, the collectives
#   reference  comparisons against PyTorch and the other outside references (HF tokenizers, llm.c's
#              shard format, PEFT's files)
#   system     real launchers (Open MPI, MPICH, Slurm, torchrun), network namespaces, the installed SDK
# SERIAL: the test measures a speed or keeps both cores busy while it judges a time limit, so it runs
# alone (RUN_SERIAL): a neighbour would make its clocks lie.
# DEADLINE: the test judges a deadline (a hang named within hang_timeout, a dead peer within the
# collective timeout) while mostly waiting, using little CPU.  It carries the label `deadline`, and
# tests/tiers.sh runs a tier's deadline tests in a pass of their own, two at a time: beside each other
# they wait in parallel, where RUN_SERIAL left a core idle, and never beside a busy neighbour.
# Every test gets SR_TEST_ENV (below) and its own ENV; the timeout defaults to the tier's.
set(SR_TEST_TIERS quick behaviour reference system)
set(SR__TEST_TIMEOUT_quick 120)
set(SR__TEST_TIMEOUT_behaviour 300)
set(SR__TEST_TIMEOUT_reference 600)
set(SR__TEST_TIMEOUT_system 300)

# What every test reads (tests/cli/lib.sh): the executable, the build and source trees, the
# tokenizer's test executable, whether this is the sanitizer build; under the sanitizers a crashing
# test task must still die by its own signal (the crash tests check the signal's name), so ASan does
# not catch SEGV there.
set(SR__SANITIZED 0)
if(SHARDRUN_SANITIZE)
  set(SR__SANITIZED 1)
endif()
set(SR_TEST_ENV "SHARDRUN=$<TARGET_FILE:shardrun_exe>" "BUILD=${CMAKE_BINARY_DIR}" "SRC=${PROJECT_SOURCE_DIR}"
    "GPT2_TOKENIZE=$<TARGET_FILE:gpt2_tokenize>" "SANITIZED=${SR__SANITIZED}")
if(SHARDRUN_SANITIZE)
  list(APPEND SR_TEST_ENV "ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=1")
endif()

function(sr_test name)
  cmake_parse_arguments(PARSE_ARGV 1 A "SERIAL;DEADLINE" "TIER;TIMEOUT" "ENV;COMMAND")
  if(A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sr_test(${name}): unknown arguments '${A_UNPARSED_ARGUMENTS}'")
  endif()
  if(NOT A_TIER IN_LIST SR_TEST_TIERS)
    message(FATAL_ERROR "sr_test(${name}): TIER '${A_TIER}' is not one of ${SR_TEST_TIERS}")
  endif()
  if(NOT A_COMMAND)
    message(FATAL_ERROR "sr_test(${name}): no COMMAND")
  endif()
  set(timeout ${SR__TEST_TIMEOUT_${A_TIER}})
  if(A_TIMEOUT)
    set(timeout ${A_TIMEOUT})
  endif()
  if(A_SERIAL AND A_DEADLINE)
    message(FATAL_ERROR "sr_test(${name}): SERIAL or DEADLINE, not both")
  endif()
  set(env ${SR_TEST_ENV} ${A_ENV})
  set(labels ${A_TIER})
  if(A_DEADLINE)
    list(APPEND labels deadline)
  endif()
  add_test(NAME ${name} COMMAND ${A_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS "${labels}" TIMEOUT ${timeout} ENVIRONMENT "${env}")
  if(A_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
