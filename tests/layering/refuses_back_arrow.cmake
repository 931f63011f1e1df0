# Test (cmake -P): the layer check refuses an include that runs back up an arrow and names the file and the arrow,
# refuses an include of a header another library keeps to itself (not in its PUBLIC list) and passes its public
# one, and passes the real loader/io folder with the folders its library links.
#   cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir> -P tests/layering/refuses_back_arrow.cmake
set(check "${SOURCE_DIR}/cmake/CheckLayer.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/loader/io")
file(WRITE "${WORK_DIR}/loader/io/bad.cpp" "#include \"loader/io/io_engine.h\"\n#include \"emulator/run/run.h\"\n")

execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK_DIR} -DDIRS=loader/io "-DALLOWED=loader/util;loader"
                        -P ${check}
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(code EQUAL 0)
  message(FATAL_ERROR "loader/io including emulator/run was not refused")
endif()
if(NOT err MATCHES "loader/io/bad.cpp includes emulator/run/run.h: loader/io may not depend on emulator/run")
  message(FATAL_ERROR "the refusal does not name the file and the arrow:\n${err}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${SOURCE_DIR} -DDIRS=loader/io "-DALLOWED=loader/util;loader"
                        -P ${check}
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "the real loader/io was refused:\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${SOURCE_DIR} -DDIRS=emulator/host "-DALLOWED=loader/util;loader"
                        -P ${check}
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(code EQUAL 0 OR NOT err MATCHES "emulator/host/cache_control.h includes loader/io/page_cache.h")
  message(FATAL_ERROR "emulator/host without loader/io allowed was not refused:\n${err}")
endif()
# A header loader/io keeps to itself, included from a folder that may use loader/io.
file(MAKE_DIRECTORY "${WORK_DIR}/emulator/host")
file(WRITE "${WORK_DIR}/emulator/host/inner.cpp" "#include \"loader/io/io_engine.h\"\n#include \"loader/io/posix_engine.h\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -DROOT=${WORK_DIR} -DDIRS=emulator/host "-DALLOWED=loader/io;loader/util;loader"
                        "-DPUBLIC=loader/io/io_engine.h;loader/util/clock.h" -P ${check}
                RESULT_VARIABLE code ERROR_VARIABLE err)
if(code EQUAL 0 OR NOT err MATCHES "emulator/host/inner.cpp includes loader/io/posix_engine.h: loader/io keeps it to itself")
  message(FATAL_ERROR "an include of loader/io's own posix_engine.h was not refused naming it:\n${err}")
endif()
if(err MATCHES "io_engine.h")
  message(FATAL_ERROR "loader/io's public io_engine.h was refused:\n${err}")
endif()
message(STATUS "layer check: refuses the back arrow and another library's own header, passes the real tree")
