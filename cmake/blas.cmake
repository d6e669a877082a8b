# The BLAS of the decoder models' CPU kernels (models/transformer/kernels_cpu.c), OpenBLAS's or
# BLIS's OpenMP build (SHARDRUN_BLAS).  Sets SHARDRUN_HAVE_GPT2 (ON when found, or SHARDRUN_GPT2=OFF
# leaves it OFF), OPENBLAS_OPENMP_LIB and OPENBLAS_OPENMP_INCLUDE (whichever BLAS it is) and
# BLAS_RPATH, which models/, tools/, selftest/, tests/ and bench/ read.
set(SHARDRUN_HAVE_GPT2 OFF)
if(NOT SHARDRUN_GPT2 STREQUAL "OFF")
  find_package(OpenMP COMPONENTS C)
  if(SHARDRUN_BLAS STREQUAL "BLIS")
    find_library(BLIS_OPENMP_LIB blis PATHS ${SHARDRUN_BLIS_ROOT}/lib
                 ${SHARDRUN_BLIS_ROOT}/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp
                 /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp NO_DEFAULT_PATH)
    find_path(BLIS_OPENMP_INCLUDE blis.h PATHS ${SHARDRUN_BLIS_ROOT}/include
              ${SHARDRUN_BLIS_ROOT}/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp
              /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/blis-openmp NO_DEFAULT_PATH)
    # below, OPENBLAS_OPENMP_* name the kernels' BLAS, whichever it is
    set(OPENBLAS_OPENMP_LIB ${BLIS_OPENMP_LIB})
    set(OPENBLAS_OPENMP_INCLUDE ${BLIS_OPENMP_INCLUDE})
    set(blas_package "BLIS built with OpenMP (apt-get install libblis-openmp-dev)")
  else()
    find_library(OPENBLAS_OPENMP_LIB openblas PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
                 NO_DEFAULT_PATH)
    find_path(OPENBLAS_OPENMP_INCLUDE cblas.h PATHS /usr/include/${CMAKE_LIBRARY_ARCHITECTURE}/openblas-openmp
              NO_DEFAULT_PATH)
    set(blas_package "OpenBLAS built with OpenMP (apt-get install libopenblas-openmp-dev)")
  endif()
  get_filename_component(BLAS_RPATH "${OPENBLAS_OPENMP_LIB}" DIRECTORY)
  if(OpenMP_C_FOUND AND OPENBLAS_OPENMP_LIB AND OPENBLAS_OPENMP_INCLUDE)
    set(SHARDRUN_HAVE_GPT2 ON)
  else()
    set(gpt2_missing "")
    if(NOT OpenMP_C_FOUND)
      list(APPEND gpt2_missing "OpenMP for the C compiler (${CMAKE_C_COMPILER_ID})")
    endif()
    if(NOT OPENBLAS_OPENMP_LIB OR NOT OPENBLAS_OPENMP_INCLUDE)
      list(APPEND gpt2_missing "${blas_package}")
    endif()
    list(JOIN gpt2_missing " and " gpt2_missing)
    if(SHARDRUN_GPT2 STREQUAL "ON")
      message(FATAL_ERROR "SHARDRUN_GPT2=ON but models/gpt2 needs ${gpt2_missing}; install it or use "
                          "-DSHARDRUN_GPT2=OFF")
    endif()
    message(WARNING "models/gpt2 (gpt2.so), the gpt2_* tests that run it and bench/gemm_throughput are "
                    "NOT built: they need ${gpt2_missing}.  -DSHARDRUN_GPT2=OFF leaves them out without this "
                    "warning.")
  endif()
endif()
