# The folders inside models/src and kernels/src are layers (models/README.md and kernels/README.md, "Layers"):
# a file may include a header of its own folder, of a lower layer, or of the folder's root, never of a layer at
# its own level or above. Run by ctest: cmake -DSOURCE_DIR=<tree> -P test/folder_layers.cmake; it prints every
# include that breaks the order and fails.
#
# Ranks, lowest first. Folders of one rank are siblings and include none of each other.
cmake_minimum_required(VERSION 3.16)

set(models_ranks
    block=1 memory=2 dma=3 mxu=3 vpu=3 vmem=3 hbm=3 cmem=3 host=3 sparsecore=3 tensorcore=4 ici=4 chip=5
    net=6 mirror=7 job=8)
set(kernels_ranks ir=1 collectives=1 program_file=2 tiling=2 graph=3 zoo=4 sharding=5)
# Known upward includes, to be removed: none left. The chip and the network meet through interfaces below
# both (ici/chip_port.h, ici/network_port.h), and the interconnect checks mirrors through net/mirror_check.h,
# which the mirroring implements. An entry "models/src/<file> -> <folder>" here would let one through; a new
# upward include fails, and a listed one that is gone fails until its line is deleted.
set(known "")

set(broken "")
set(seen_known "")
foreach(layer models kernels)
  set(rank_of "")
  foreach(entry IN LISTS ${layer}_ranks)
    string(REPLACE "=" ";" pair "${entry}")
    list(GET pair 0 folder)
    list(GET pair 1 rank)
    set(rank_${layer}_${folder} ${rank})
  endforeach()
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}" "${SOURCE_DIR}/${layer}/src/*.h" "${SOURCE_DIR}/${layer}/src/*.cpp")
  foreach(source IN LISTS sources)
    string(REGEX MATCH "^${layer}/src/([a-z_]+)/" in_folder "${source}")
    if(NOT in_folder)
      continue()  # a file at the root of src/ may include any folder
    endif()
    set(from "${CMAKE_MATCH_1}")
    if(NOT DEFINED rank_${layer}_${from})
      list(APPEND broken "${source}: its folder ${from}/ has no rank in test/folder_layers.cmake")
      continue()
    endif()
    file(STRINGS "${SOURCE_DIR}/${source}" includes REGEX "^#include \"(\\.\\./)?[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "^#include \"(\\.\\./)?([a-z_]+)/" m "${line}")
      set(to "${CMAKE_MATCH_2}")
      if(to STREQUAL from OR NOT DEFINED rank_${layer}_${to})
        continue()  # its own folder, or a path outside these layers (tpusim/..., tools/...)
      endif()
      if(rank_${layer}_${to} LESS rank_${layer}_${from})
        continue()
      endif()
      if("${source} -> ${to}" IN_LIST known)
        list(APPEND seen_known "${source} -> ${to}")
        continue()
      endif()
      list(APPEND broken "${source}: ${line} (${from}/ is at rank ${rank_${layer}_${from}}, ${to}/ at ${rank_${layer}_${to}})")
    endforeach()
  endforeach()
endforeach()
foreach(k IN LISTS known)
  if(NOT k IN_LIST seen_known)
    list(APPEND broken "the known upward include '${k}' is gone: delete its line from test/folder_layers.cmake")
  endif()
endforeach()
if(broken)
  list(JOIN broken "\n  " text)
  message(FATAL_ERROR "includes against the folder layers:\n  ${text}")
endif()
message(STATUS "folder layers: no include runs upward (the known ones excepted)")
