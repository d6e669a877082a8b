# What `cmake --install build --prefix P` puts under P, and the Debian packages `cpack -G DEB` makes
# of it (docs/sdk.md).  The tree is relocatable: nothing in it names P but shardrun.pc, which
# `pkg-config --define-prefix` relocates.
#   bin/shardrun, bin/shardrun_prepare,      RPATH
#   bin/shardrun_merge
#   bin/gpt2_generate, bin/shardrun_generate  $ORIGIN/../<libdir>: run with no LD_LIBRARY_PATH
#   <libdir>/libshardrun.so (+ _cuda)         where the runtime looks for plugins and tasks:
#   <libdir>/shardrun/plugins, .../tasks      (base/lib_dir.c: relative to libshardrun.so)
#   include/shardrun/                         the public API
#   <libdir>/pkgconfig/shardrun.pc            pkg-config --cflags --libs shardrun
#   <libdir>/cmake/shardrun/                  find_package(shardrun CONFIG): shardrun::shardrun,
#                                             shardrun_task(), shardrun_plugin()
#   share/doc/shardrun/, share/shardrun/examples/   the docs, the example job files, the SDK examples
include(CMakePackageConfigHelpers)
set(SHARDRUN_INSTALL_PLUGINDIR ${CMAKE_INSTALL_LIBDIR}/shardrun/plugins)
set(SHARDRUN_INSTALL_TASKDIR ${CMAKE_INSTALL_LIBDIR}/shardrun/tasks)
set(SHARDRUN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/shardrun)

# RPATHs relative to the binary's own folder
file(RELATIVE_PATH bin_to_lib /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
set_property(TARGET shardrun_exe PROPERTY INSTALL_RPATH "$ORIGIN/${bin_to_lib}")

install(TARGETS shardrun EXPORT shardrunTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS shardrun_exe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
set_property(TARGET shardrun_prepare PROPERTY INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
install(TARGETS shardrun_prepare RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS shardrun_merge RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
install(TARGETS shardrun_plugin_torch shardrun_plugin_accelerate LIBRARY DESTINATION ${SHARDRUN_INSTALL_PLUGINDIR}
        COMPONENT runtime)
install(TARGETS shardrun_task_hello shardrun_task_pgbench shardrun_task_toy LIBRARY DESTINATION ${SHARDRUN_INSTALL_TASKDIR}
        COMPONENT runtime)
if(SHARDRUN_HAVE_GPT2)
  install(TARGETS shardrun_task_gpt2 shardrun_task_bloom shardrun_task_llama shardrun_task_selftest
          LIBRARY DESTINATION ${SHARDRUN_INSTALL_TASKDIR} COMPONENT runtime)
  set_property(TARGET gpt2_generate shardrun_generate APPEND PROPERTY INSTALL_RPATH "$ORIGIN/${bin_to_lib}")
  install(TARGETS gpt2_generate shardrun_generate RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()
if(SHARDRUN_HAVE_CUDA)
  # next to libshardrun.so, where it looks (device/cuda_lib.c); transformer_cuda.so next to gpt2.so
  install(TARGETS shardrun_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
  if(SHARDRUN_HAVE_GPT2)
    install(TARGETS transformer_cuda LIBRARY DESTINATION ${SHARDRUN_INSTALL_TASKDIR} COMPONENT runtime)
  endif()
endif()

# the SDK: headers, pkg-config, the CMake package
install(DIRECTORY include/shardrun DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
install(EXPORT shardrunTargets NAMESPACE shardrun:: DESTINATION ${SHARDRUN_INSTALL_CMAKEDIR} COMPONENT dev)
configure_package_config_file(cmake/shardrunConfig.cmake.in ${CMAKE_BINARY_DIR}/shardrunConfig.cmake
  INSTALL_DESTINATION ${SHARDRUN_INSTALL_CMAKEDIR} PATH_VARS SHARDRUN_INSTALL_PLUGINDIR SHARDRUN_INSTALL_TASKDIR)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/shardrunConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/shardrunConfig.cmake ${CMAKE_BINARY_DIR}/shardrunConfigVersion.cmake
        cmake/shardrunFunctions.cmake DESTINATION ${SHARDRUN_INSTALL_CMAKEDIR} COMPONENT dev)
# shardrun.pc names the prefix it is installed into, known only when installing (`cmake --install
# --prefix P`, cpack's /usr; DESTDIR not included), so that pkg-config prints clean paths
# (-IP/include; a prefix worked out from ${pcfiledir} printed -IP/lib/pkgconfig/../../include).
# A tree moved elsewhere afterwards: `pkg-config --define-prefix` takes the prefix from where the
# .pc lies.  The first pass fills in all but the prefix, kept as @SHARDRUN_PC_PREFIX@.
set(SHARDRUN_PC_PREFIX "@SHARDRUN_PC_PREFIX@")
configure_file(cmake/shardrun.pc.in ${CMAKE_BINARY_DIR}/shardrun.pc.in @ONLY)
install(CODE "get_filename_component(SHARDRUN_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\" ABSOLUTE)
configure_file(\"${CMAKE_BINARY_DIR}/shardrun.pc.in\" \"${CMAKE_BINARY_DIR}/shardrun.pc\" @ONLY)" COMPONENT dev)
install(FILES ${CMAKE_BINARY_DIR}/shardrun.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# docs and examples
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT runtime FILES_MATCHING PATTERN "*.md" PATTERN "*.svg")
install(DIRECTORY examples/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardrun/examples COMPONENT runtime
        FILES_MATCHING PATTERN "*.ini" PATTERN "sdk" EXCLUDE)
install(DIRECTORY examples/sdk/ DESTINATION ${CMAKE_INSTALL_DATADIR}/shardrun/examples/sdk COMPONENT dev)

# ---- cpack -G DEB: shardrun (the runtime) and shardrun-dev (the SDK) ------------------------
set(CPACK_PACKAGE_NAME shardrun)
set(CPACK_PACKAGE_VENDOR "shardrun")
set(CPACK_PACKAGE_CONTACT "shardrun developers <shardrun@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "C runtime for distributed (FSDP) training of C/CUDA tasks")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON) # as dh_strip does: the build may carry -g (Debian's flags do)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON) # the runtime's library dependencies, found by dpkg-shlibdeps
# libcurl is loaded (dlopen) by rdzv_backend = etcd only (core/etcd/curl_lib.h): dpkg-shlibdeps cannot see it
set(CPACK_DEBIAN_RUNTIME_PACKAGE_RECOMMENDS "libcurl4")
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME shardrun)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME shardrun-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "shardrun (= ${PROJECT_VERSION}), pkg-config")
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
include(CPack)
