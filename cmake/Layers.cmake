# One folder, one job, one library: feedrate_layer() makes a folder's library link the libraries it uses and
# refuses, at configure time, any include of a folder those libraries do not bring (cmake/CheckLayer.cmake), so an
# arrow that runs back up (loader -> emulator, host -> training, ...) stops the build with the file that drew it.
include(${CMAKE_CURRENT_LIST_DIR}/CheckLayer.cmake)

# feedrate_layer(<target> DIRS <folder>... [USES <feedrate target>...])
# <target> must exist (a STATIC or INTERFACE library, or an executable); folders are relative to the source root.
function(feedrate_layer target)
  cmake_parse_arguments(L "" "" "DIRS;USES" ${ARGN})
  set(allowed ${L_DIRS})
  foreach(dep IN LISTS L_USES)
    get_property(dep_dirs GLOBAL PROPERTY FEEDRATE_LAYER_DIRS_${dep})
    if(NOT dep_dirs)
      message(FATAL_ERROR "feedrate_layer(${target}): ${dep} is not a layer declared before it")
    endif()
    list(APPEND allowed ${dep_dirs})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY FEEDRATE_LAYER_DIRS_${target} "${allowed}")
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_link_libraries(${target} INTERFACE ${L_USES})
  else()
    target_link_libraries(${target} PUBLIC ${L_USES})
  endif()
  feedrate_check_layer("${CMAKE_SOURCE_DIR}" "${L_DIRS}" "${allowed}" errors)
  if(errors)
    list(JOIN errors "\n  " text)
    message(FATAL_ERROR "includes against the architecture's arrows (docs/architecture.md):\n  ${text}")
  endif()
  if(NOT L_DIRS)
    return()
  endif()
  # Again at build time whenever one of the folder's files changes (an edited include reruns no configure step).
  set(files "")
  foreach(dir IN LISTS L_DIRS)
    file(GLOB dir_files CONFIGURE_DEPENDS "${CMAKE_SOURCE_DIR}/${dir}/*.h" "${CMAKE_SOURCE_DIR}/${dir}/*.cpp")
    list(APPEND files ${dir_files})
  endforeach()
  set(stamp "${CMAKE_BINARY_DIR}/layers/${target}.checked")
  file(MAKE_DIRECTORY "${CMAKE_BINARY_DIR}/layers")  # (the Makefiles generator does not create an output's folder)
  add_custom_command(OUTPUT "${stamp}"
                     COMMAND ${CMAKE_COMMAND} "-DROOT=${CMAKE_SOURCE_DIR}" "-DDIRS=${L_DIRS}" "-DALLOWED=${allowed}"
                             -P "${CMAKE_SOURCE_DIR}/cmake/CheckLayer.cmake"
                     COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
                     DEPENDS ${files} "${CMAKE_SOURCE_DIR}/cmake/CheckLayer.cmake"
                     COMMENT "Checking ${target}'s includes against the arrows" VERBATIM)
  add_custom_target(${target}_layer_check DEPENDS "${stamp}")
  add_dependencies(${target} ${target}_layer_check)
endfunction()
