# shardrun_task(NAME OUTPUT_DIR SOURCES...): a task NAME.so (a main task or a model task) in
# OUTPUT_DIR, linked against libshardrun (target shardrun::shardrun).
# shardrun_plugin(NAME SOURCES...): a plugin shardrun_NAME.so, built against the public headers
# only, in ${CMAKE_CURRENT_BINARY_DIR}/plugins (or SHARDRUN_PLUGIN_OUTPUT_DIR when set).
# The same functions build shardrun's own tasks and plugins and, through find_package(shardrun
# CONFIG), a user's (docs/sdk.md).  Only the names shardrun_*.h declare are visible: a task's own
# symbols stay out of the process's namespace, where another task's could clash with them.
function(shardrun_task name dir)
  add_library(shardrun_task_${name} MODULE ${ARGN})
  target_link_libraries(shardrun_task_${name} PRIVATE shardrun::shardrun)
  set_target_properties(shardrun_task_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME ${name} C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${dir})
endfunction()

function(shardrun_plugin name)
  add_library(shardrun_plugin_${name} MODULE ${ARGN})
  # the headers only: a plugin runs in the agent before any task and calls the host through the
  # function table it is given, never libshardrun's symbols
  target_include_directories(shardrun_plugin_${name} PRIVATE
    $<TARGET_PROPERTY:shardrun::shardrun,INTERFACE_INCLUDE_DIRECTORIES>)
  if(DEFINED SHARDRUN_PLUGIN_OUTPUT_DIR)
    set(out ${SHARDRUN_PLUGIN_OUTPUT_DIR})
  else()
    set(out ${CMAKE_CURRENT_BINARY_DIR}/plugins)
  endif()
  set_target_properties(shardrun_plugin_${name} PROPERTIES
    PREFIX "" OUTPUT_NAME shardrun_${name} C_VISIBILITY_PRESET hidden LIBRARY_OUTPUT_DIRECTORY ${out})
endfunction()
