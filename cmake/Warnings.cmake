# Project-wide warning flags, applied per target with feedrate_warnings(<target>).
function(feedrate_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                         -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough
                         # Status and Result are [[nodiscard]]: an error dropped on the floor stops the build.
                         -Werror=unused-result)
  # A unity build #includes each .cpp, so g++ takes a file-local type used by the file's own class for one
  # declared in a header and warns; a non-unity build (fuzz preset, -DCMAKE_UNITY_BUILD=OFF) still checks it.
  if(CMAKE_UNITY_BUILD)
    target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
  endif()
endfunction()

# Precompiled headers for the heavy header-only libraries a target's files include (CLI11 alone costs ~9 s of g++
# per file, nlohmann/json ~2.5 s, GoogleTest ~3 s): each target parses them once. FEEDRATE_PCH=OFF turns it off.
option(FEEDRATE_PCH "Precompile the heavy third-party headers per target" ON)
function(feedrate_pch target)
  if(FEEDRATE_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()
