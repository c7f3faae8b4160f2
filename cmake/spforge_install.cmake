# ==== spforge install rules ==================================================
# Included from CMakeLists.txt when SPF_INSTALL is on (the default when
# spforge is the top project). `cmake --install build [--prefix P]` puts
#   include/spforge.h                  the one public header (src/ is internal)
#   lib/libspforge.so.X.Y.Z, .so.X     the shared library, soname libspforge.so.X
#   lib/libspforge.so                  its link-time name
#   lib/libspforge_ptxc.so             the in-process PTX compiler, a module
#                                      libspforge.so loads (builds that found it)
#   lib/libspforge.a                   the static library
#   lib/spforge/libnvptxcompiler_static.a  what libspforge.a calls to assemble PTX
#                                      in process (builds that found it)
#   lib/cmake/spforge/                 find_package(spforge): spforge::spforge,
#                                      spforge::spforge_static (the build folder
#                                      itself is one too: spforge_DIR=<build>)
#   lib/pkgconfig/spforge.pc           pkg-config (Libs.private: the static link)
#   bin/spforge                        the CLI (statically linked)
# where lib is CMAKE_INSTALL_LIBDIR (lib64 or lib/<multiarch> on some
# systems). Components, for packagers and wheels: runtime (the shared
# library), development (the rest of the library: header, link name, static
# library, packages), cli. Every installed path is relative to the prefix:
# the tree can be moved (tests/install/test_install.sh moves it).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(SPF_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/spforge)

# Two export sets: the shared library's needs nothing at all from the user's
# machine (the CUDA runtime is inside it); the static library's needs its
# link dependencies found (cmake/spforgeConfig.cmake.in).
install(TARGETS spforge EXPORT spforgeTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS spforge_static EXPORT spforgeStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The in-process PTX compiler's module, which libspforge.so loads from its
# own folder (src/gpu/ptx_compiler.c).
if(TARGET spforge_ptxc)
  install(TARGETS spforge_ptxc LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
endif()
install(TARGETS spforge_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
install(FILES ${PROJECT_SOURCE_DIR}/include/spforge.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development)
# The in-process PTX compiler that libspforge.a calls into (NVIDIA's PTX
# Compiler API, a static library; libspforge.so loads it from the module
# libspforge_ptxc.so): installed
# under lib/spforge/ for the static library's users, as the toolkit or the
# wheel of scripts/fetch-nvptxcompiler.sh may not be on their machine.
set(SPF_NVPTXCOMPILER_INSTALLED "")
if(SPF_HAVE_NVPTXCOMPILER)
  set(SPF_NVPTXCOMPILER_INSTALLED ${CMAKE_INSTALL_LIBDIR}/spforge/libnvptxcompiler_static.a)
  install(FILES ${SPF_NVPTXCOMPILER_LIBRARY} DESTINATION ${CMAKE_INSTALL_LIBDIR}/spforge
    RENAME libnvptxcompiler_static.a COMPONENT development)
endif()

install(EXPORT spforgeTargets NAMESPACE spforge:: DESTINATION ${SPF_INSTALL_CMAKEDIR}
  COMPONENT development)
install(EXPORT spforgeStaticTargets NAMESPACE spforge:: DESTINATION ${SPF_INSTALL_CMAKEDIR}
  COMPONENT development)
# The build folder is a package too: find_package(spforge) with spforge_DIR
# naming it takes the libraries where they were built, with no install
# (the same config file below, beside these target files).
export(EXPORT spforgeTargets NAMESPACE spforge:: FILE ${PROJECT_BINARY_DIR}/spforgeTargets.cmake)
export(EXPORT spforgeStaticTargets NAMESPACE spforge::
  FILE ${PROJECT_BINARY_DIR}/spforgeStaticTargets.cmake)

# The toolkit the static library was built with: its kernels' host code
# calls into that version's static runtime, so a consumer needs at least
# that version (the package looks there first).
set(SPF_CUDA_ROOT "")
set(SPF_CUDA_VERSION "")
if(SPF_HAVE_CUDA)
  get_filename_component(SPF_CUDA_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  set(SPF_CUDA_VERSION ${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR})
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/spforgeConfig.cmake.in
  ${PROJECT_BINARY_DIR}/spforgeConfig.cmake INSTALL_DESTINATION ${SPF_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/spforgeConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/spforgeConfig.cmake ${PROJECT_BINARY_DIR}/spforgeConfigVersion.cmake
  DESTINATION ${SPF_INSTALL_CMAKEDIR} COMPONENT development)

# pkg-config: prefix is found from the .pc file's own folder (${pcfiledir}),
# so a moved tree still works. Libs.private is what static linking
# (pkg-config --static) adds: the same dependencies as spforge::spforge_static.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  # An absolute libdir: the configured prefix, written out (not relocatable).
  set(SPF_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(SPF_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH spf_pc_up /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
  string(REGEX REPLACE "/$" "" spf_pc_up "${spf_pc_up}")
  set(SPF_PC_PREFIX "\${pcfiledir}/${spf_pc_up}")
  set(SPF_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(SPF_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(SPF_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
set(SPF_PC_LIBS_PRIVATE "-lpthread -lm")
if(SPF_HAVE_CUDA)
  set(SPF_PC_LIBS_PRIVATE
    "-L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt -ldl -lpthread -lm -lstdc++")
  if(SPF_HAVE_NVPTXCOMPILER)
    set(SPF_PC_LIBS_PRIVATE "\${libdir}/spforge/libnvptxcompiler_static.a ${SPF_PC_LIBS_PRIVATE}")
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/spforge.pc.in ${PROJECT_BINARY_DIR}/spforge.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/spforge.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
# ==== end of the spforge install rules =======================================
