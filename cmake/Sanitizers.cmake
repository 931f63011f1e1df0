# Sanitizer instrumentation for the whole build, selected by FEEDRATE_SANITIZE (see CMakePresets.json).
if(FEEDRATE_SANITIZE)
  string(REPLACE ";" "," _fr_san "${FEEDRATE_SANITIZE}")
  add_compile_options(-fsanitize=${_fr_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${_fr_san})
endif()
