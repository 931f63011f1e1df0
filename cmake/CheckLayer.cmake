# The arrows of docs/architecture.md, checked on the includes: a folder's files may include headers only from the
# folders its library links (directly or through what those link), and of another library's headers only those it
# offers (PUBLIC: source-root paths; unchecked when not given). Used at configure time by feedrate_layer()
# (cmake/Layers.cmake) and in script mode by the test that shows it refusing an arrow that runs back up:
#   cmake -DROOT=<source dir> -DDIRS=<folder;...> -DALLOWED=<folder;...> [-DPUBLIC=<header;...>] -P cmake/CheckLayer.cmake
cmake_policy(VERSION 3.20)  # IN_LIST in script mode
# Only project includes are checked ("loader/...", "emulator/...", "datagen/...", "cli/..."); the including
# folder's own headers are always allowed.

# Sets `out` to one line per include in root/<dirs>/*.{h,cpp} (not below) whose folder is not in `allowed`, or
# that names another folder's header not in `public` (when `public` is not empty).
function(feedrate_check_layer root dirs allowed public out)
  set(errors "")
  foreach(dir IN LISTS dirs)
    file(GLOB files "${root}/${dir}/*.h" "${root}/${dir}/*.cpp")
    foreach(f IN LISTS files)
      file(STRINGS "${f}" includes REGEX "^#include \"(loader|emulator|datagen|cli)/")
      foreach(line IN LISTS includes)
        string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" header "${line}")
        get_filename_component(header_dir "${header}" DIRECTORY)
        if(NOT header_dir IN_LIST allowed)
          file(RELATIVE_PATH rel "${root}" "${f}")
          list(APPEND errors "${rel} includes ${header}: ${dir} may not depend on ${header_dir}")
        elseif(public AND NOT header_dir IN_LIST dirs AND NOT header IN_LIST public)
          file(RELATIVE_PATH rel "${root}" "${f}")
          list(APPEND errors "${rel} includes ${header}: ${header_dir} keeps it to itself (not in its PUBLIC list)")
        endif()
      endforeach()
    endforeach()
  endforeach()
  set(${out} "${errors}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND DEFINED ROOT)
  feedrate_check_layer("${ROOT}" "${DIRS}" "${DIRS};${ALLOWED}" "${PUBLIC}" errors)
  if(errors)
    list(JOIN errors "\n  " text)
    message(FATAL_ERROR "includes against the architecture's arrows (docs/architecture.md):\n  ${text}")
  endif()
endif()
