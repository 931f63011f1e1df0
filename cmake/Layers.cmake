# One folder, one job, one library: feedrate_layer() makes a folder's library link the libraries it uses and
# refuses, at configure time, any include of a folder those libraries do not bring (cmake/CheckLayer.cmake), so an
# arrow that runs back up (loader -> emulator, host -> training, ...) stops the build with the file that drew it;
# and any include, from another folder, of a header its library does not offer (not in its PUBLIC list).
include(${CMAKE_CURRENT_LIST_DIR}/CheckLayer.cmake)

# feedrate_layer(<target> DIRS <folder>... [USES <feedrate target>...] [PUBLIC <header>...])
# <target> must exist (a STATIC or INTERFACE library, or an executable); folders are relative to the source root.
# PUBLIC names, relative to one of its folders, the headers the library offers to other folders; the rest of its
# headers are its own (docs/architecture.md). Declare a layer after the layers it uses.
function(feedrate_layer target)
  cmake_parse_arguments(L "" "" "DIRS;USES;PUBLIC" ${ARGN})
  feedrate_declare_public("${L_DIRS}" "${L_PUBLIC}" ${target})
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
  get_property(public GLOBAL PROPERTY FEEDRATE_PUBLIC_HEADERS)
  feedrate_check_layer("${CMAKE_SOURCE_DIR}" "${L_DIRS}" "${allowed}" "${public}" errors)
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
                             "-DPUBLIC=${public}"
                             -P "${CMAKE_SOURCE_DIR}/cmake/CheckLayer.cmake"
                     COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
                     DEPENDS ${files} "${CMAKE_SOURCE_DIR}/cmake/CheckLayer.cmake"
                     COMMENT "Checking ${target}'s includes against the arrows" VERBATIM)
  add_custom_target(${target}_layer_check DEPENDS "${stamp}")
  add_dependencies(${target} ${target}_layer_check)
endfunction()

# Adds DIRS' PUBLIC headers, as source-root paths, to the project's list; a name no folder holds stops the build.
function(feedrate_declare_public dirs headers target)
  set(paths "")
  foreach(h IN LISTS headers)
    set(found "")
    foreach(dir IN LISTS dirs)
      if(EXISTS "${CMAKE_SOURCE_DIR}/${dir}/${h}")
        set(found "${dir}/${h}")
        break()
      endif()
    endforeach()
    if(NOT found)
      message(FATAL_ERROR "feedrate_layer(${target}): PUBLIC ${h} is in none of ${dirs}")
    endif()
    list(APPEND paths "${found}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY FEEDRATE_PUBLIC_HEADERS ${paths})
endfunction()
