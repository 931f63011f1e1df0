# Project-wide warning flags, applied per target with feedrate_warnings(<target>).
function(feedrate_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
                         -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough)
endfunction()
