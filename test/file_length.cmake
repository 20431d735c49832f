# No source file under models/, kernels/ or tools/ is longer than 600 lines (issue 23): a file that grows past
# it holds more than one responsibility and is split by them. Run by ctest: cmake -DSOURCE_DIR=<tree> -P
# test/file_length.cmake; it names every file over the limit and fails.
cmake_minimum_required(VERSION 3.16)

set(limit 600)
set(broken "")
foreach(layer models kernels tools)
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${layer}/*.h" "${SOURCE_DIR}/${layer}/*.cpp")
  foreach(source IN LISTS sources)
    # Count newlines, blank lines included (file(STRINGS) would skip them).
    file(READ "${SOURCE_DIR}/${source}" text)
    string(REGEX REPLACE "[^\n]" "" newlines "${text}")
    string(LENGTH "${newlines}" lines)
    if(lines GREATER limit)
      list(APPEND broken "${source}: ${lines} lines")
    endif()
  endforeach()
endforeach()
if(broken)
  list(JOIN broken "\n  " text)
  message(FATAL_ERROR "source files over ${limit} lines:\n  ${text}")
endif()
message(STATUS "file length: no source file under models/, kernels/ or tools/ over ${limit} lines")
