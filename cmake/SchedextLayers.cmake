# The layers of src/ as libraries whose include paths enforce the layering.
#
# Every layer is one static library, schedext_<layer>, that links the layers
# below it and nothing above. Its headers are not reached through the source
# tree's include/ and src/ roots (which would hand every header to everyone)
# but through a header view: a directory under the build tree holding
# symbolic links to that layer's headers only, at the same relative paths
# ("schedext/wire/decoder.h", "wire/json_scan.h"). A library's view is a
# PUBLIC include directory, so a layer sees its own headers and those of the
# layers it links, transitively, and no others: a wrong-way include such as
# `#include "schedext/server/service.h"` in cluster/ fails to compile with
# "No such file or directory". test/layering/ proves it in CTest.
#
# Tests, benchmarks and fuzz targets may reach any header: they add the real
# include/ and src/ roots themselves.

set(SCHEDEXT_VIEW_ROOT ${CMAKE_BINARY_DIR}/header-views)

# schedext_header_view(target PATHS...): makes `target`'s view from PATHS,
# each a header file or a folder (its *.h, not its subfolders), relative to
# the project; include/X and src/X are linked at X in the view.
function(schedext_header_view target)
  set(view ${SCHEDEXT_VIEW_ROOT}/${target})
  file(REMOVE_RECURSE ${view})
  foreach(path IN LISTS ARGN)
    set(abs ${PROJECT_SOURCE_DIR}/${path})
    if(IS_DIRECTORY ${abs})
      # CONFIGURE_DEPENDS: a header added later re-runs CMake, so it joins
      # the view without a manual reconfigure.
      file(GLOB headers CONFIGURE_DEPENDS ${abs}/*.h)
    else()
      set(headers ${abs})
    endif()
    foreach(header IN LISTS headers)
      file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${header})
      string(REGEX REPLACE "^(include|src)/" "" rel ${rel})
      get_filename_component(dir ${view}/${rel} DIRECTORY)
      file(MAKE_DIRECTORY ${dir})
      file(CREATE_LINK ${header} ${view}/${rel} SYMBOLIC)
    endforeach()
  endforeach()
  target_include_directories(${target} PUBLIC ${view})
endfunction()

# schedext_layer(<name> SOURCES... HEADERS <paths>... [DEPENDS <layers>...]
#                [PUBLIC_LIBS ...] [PRIVATE_LIBS ...])
# The library schedext_<name>: SOURCES relative to src/, HEADERS as for
# schedext_header_view, DEPENDS the layers it may use (without the prefix).
function(schedext_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;HEADERS;DEPENDS;PUBLIC_LIBS;PRIVATE_LIBS")
  set(target schedext_${name})
  list(TRANSFORM arg_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/src/)
  add_library(${target} STATIC ${arg_SOURCES})
  schedext_header_view(${target} ${arg_HEADERS})
  list(TRANSFORM arg_DEPENDS PREPEND schedext_)
  target_link_libraries(${target} PUBLIC ${arg_DEPENDS} ${arg_PUBLIC_LIBS}
                                  PRIVATE ${arg_PRIVATE_LIBS})
  schedext_set_warnings(${target})
  schedext_enable_sanitizers(${target})
  set_property(GLOBAL APPEND PROPERTY SCHEDEXT_LAYERS ${target})
endfunction()

# schedext_add_policy(<name> SOURCES... [PRIVATE_LIBS ...]): called from
# src/policy/builtin/<name>/CMakeLists.txt, SOURCES relative to that folder.
# The policy's library sees the policy framework (wire included: watched
# objects come raw), the layers below it and its own folder's headers;
# RegisterBuiltinPolicies (src/policy/builtin/builtin.cc) links every policy
# added here. Adding a policy: its folder (sources, CMakeLists.txt, tests in
# test/policy/<name>/) and one Register line in builtin.cc.
function(schedext_add_policy name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "SOURCES;PRIVATE_LIBS")
  set(folder src/policy/builtin/${name})
  list(TRANSFORM arg_SOURCES PREPEND policy/builtin/${name}/)
  schedext_layer(policy_${name} SOURCES ${arg_SOURCES}
    HEADERS ${folder}
    DEPENDS policy
    PRIVATE_LIBS ${arg_PRIVATE_LIBS})
  set_property(GLOBAL APPEND PROPERTY SCHEDEXT_POLICIES schedext_policy_${name})
endfunction()
