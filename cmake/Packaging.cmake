# What `cmake --install` lays down (the binary, the DLIO launcher, the built-in workloads' YAML and the docs) and the
# Debian package CPack makes of it (packaging/package.sh builds it and the relocatable tarball; docs/install.md).
install(DIRECTORY ${CMAKE_SOURCE_DIR}/workloads/ DESTINATION share/feedrate/workloads FILES_MATCHING PATTERN "*.yaml")
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/doc/feedrate)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION share/doc/feedrate/docs)

set(CPACK_PACKAGE_NAME feedrate)
set(CPACK_PACKAGE_VENDOR "Feedrate")
set(CPACK_PACKAGE_CONTACT "Feedrate maintainers <feedrate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "MLPerf Storage-style training-data loader and accelerator emulator")
string(CONCAT CPACK_PACKAGE_DESCRIPTION "How many accelerators can this storage keep fed? Feedrate reads DLIO datasets, "
       "emulates accelerators training on them and reports accelerator utilization with DLIO's metric definitions.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
# The shared libraries' packages come from dpkg-shlibdeps; openmpi-bin is a run-time need no ELF names: a one-process
# run's MPI_Init starts OpenMPI's orted (singleton), and --hosts starts mpirun.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "fio")
include(CPack)
