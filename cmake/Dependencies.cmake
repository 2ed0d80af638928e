# Finds LibTorch (from the venv's torch wheel or CVTRAIN_TORCH_DIR), yaml-cpp, CLI11, OpenCV, fmt,
# TurboJPEG, zlib and Catch2 — every dependency has exactly one place where it is looked up.

# LibTorch: CVTRAIN_TORCH_DIR (a LibTorch root) wins; else ask the venv's python where torch lives.
set(CVTRAIN_HOME "$ENV{CVTRAIN_HOME}")
if(NOT CVTRAIN_HOME)
  set(CVTRAIN_HOME "$ENV{HOME}/.cache/cvtrain")
endif()
if(DEFINED ENV{CVTRAIN_TORCH_DIR})
  list(APPEND CMAKE_PREFIX_PATH "$ENV{CVTRAIN_TORCH_DIR}")
else()
  find_program(CVTRAIN_PYTHON python3 HINTS "${CVTRAIN_HOME}/venv/bin" NO_DEFAULT_PATH)
  if(NOT CVTRAIN_PYTHON)
    message(FATAL_ERROR "No LibTorch: run scripts/setup.sh (venv in ${CVTRAIN_HOME}) or set CVTRAIN_TORCH_DIR")
  endif()
  execute_process(COMMAND ${CVTRAIN_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE TORCH_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${CVTRAIN_PYTHON} cannot import torch: run scripts/setup.sh")
  endif()
  list(APPEND CMAKE_PREFIX_PATH "${TORCH_PREFIX}")
endif()
# The toolkit's nvcc is enough for Torch's CMake config; nothing here compiles CUDA code.
if(EXISTS /usr/local/cuda/bin/nvcc AND NOT CMAKE_CUDA_COMPILER)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
find_package(Torch REQUIRED)

find_package(yaml-cpp REQUIRED)
find_package(fmt REQUIRED)
# The torch wheel bundles fmt 12 headers in its include folder, which would shadow Debian's fmt 9
# and then fail to link against libfmt.so.9. A folder holding only Debian's fmt, searched first, fixes it.
get_target_property(FMT_INCLUDE_DIR fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
set(CVTRAIN_FMT_INCLUDE_DIR "${CMAKE_BINARY_DIR}/fmt-include")
file(MAKE_DIRECTORY "${CVTRAIN_FMT_INCLUDE_DIR}")
file(CREATE_LINK "${FMT_INCLUDE_DIR}/fmt" "${CVTRAIN_FMT_INCLUDE_DIR}/fmt" SYMBOLIC)
find_package(ZLIB REQUIRED)
find_package(PNG REQUIRED)  # PNG decoding with its messages kept (data/png_decode.cpp)
find_package(Threads REQUIRED)
find_package(CURL REQUIRED)  # the MLflow tracking client (track/mlflow_client.cpp); Debian: libcurl4-openssl-dev

find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)

# libjpeg-turbo twice: its libjpeg API decodes (DCT scaling plus cropped and skipped scanlines,
# which TurboJPEG 2.1 cannot do), TurboJPEG encodes (shard packing, tests).
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h REQUIRED)
find_library(TURBOJPEG_LIBRARY turbojpeg REQUIRED)
find_path(JPEG_INCLUDE_DIR jpeglib.h REQUIRED)
find_library(JPEG_LIBRARY jpeg REQUIRED)

# Debian's OpenCV -dev packages for single modules ship no CMake config; find the modules directly.
find_path(OPENCV_INCLUDE_DIR opencv2/core.hpp PATH_SUFFIXES opencv4 REQUIRED)
find_library(OPENCV_CORE_LIBRARY opencv_core REQUIRED)
find_library(OPENCV_IMGPROC_LIBRARY opencv_imgproc REQUIRED)
set(OPENCV_LIBRARIES ${OPENCV_IMGPROC_LIBRARY} ${OPENCV_CORE_LIBRARY})
if(CVTRAIN_WITH_IMGCODECS)
  find_library(OPENCV_IMGCODECS_LIBRARY opencv_imgcodecs)
  if(OPENCV_IMGCODECS_LIBRARY)
    list(PREPEND OPENCV_LIBRARIES ${OPENCV_IMGCODECS_LIBRARY})
  else()
    set(CVTRAIN_WITH_IMGCODECS OFF)
  endif()
endif()
message(STATUS "cvtrain: LibTorch ${Torch_VERSION}, OpenCV imgcodecs ${CVTRAIN_WITH_IMGCODECS}")

# c10d's ProcessGroupGloo: the wheel links Gloo statically but ships no Gloo headers; Debian's
# libgloo-dev headers match the classes c10d uses (checked by the 2-rank collectives test).
find_path(GLOO_INCLUDE_DIR gloo/config.h REQUIRED)
# ProcessGroupNCCL compiles against the nccl.h torch links (the nvidia-nccl wheel), not the toolkit's.
get_filename_component(CVTRAIN_TORCH_ROOT "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
find_path(NCCL_INCLUDE_DIR nccl.h HINTS "${CVTRAIN_TORCH_ROOT}/../nvidia/nccl/include" NO_DEFAULT_PATH)
find_package(CUDAToolkit QUIET)
if(NCCL_INCLUDE_DIR AND CUDAToolkit_FOUND)
  set(CVTRAIN_WITH_NCCL ON)
else()
  set(CVTRAIN_WITH_NCCL OFF)
endif()
# CUDA streams and events for the input pipeline, when this LibTorch was built with CUDA.
if(TARGET torch_cuda AND CUDAToolkit_FOUND)
  set(CVTRAIN_WITH_CUDA ON)
else()
  set(CVTRAIN_WITH_CUDA OFF)
endif()
# nvJPEG's header from PyPI's nvidia-nvjpeg wheel (setup.sh installs it beside torch's CUDA wheels);
# the library itself is loaded at run time (data/gpu_jpeg_decoder.cpp).
find_path(NVJPEG_INCLUDE_DIR nvjpeg.h HINTS "${CVTRAIN_TORCH_ROOT}/../nvidia/cu13/include" NO_DEFAULT_PATH)
if(CVTRAIN_WITH_CUDA AND NVJPEG_INCLUDE_DIR)
  set(CVTRAIN_WITH_NVJPEG ON)
else()
  set(CVTRAIN_WITH_NVJPEG OFF)
endif()
message(STATUS "cvtrain: CUDA streams ${CVTRAIN_WITH_CUDA}, NCCL process groups ${CVTRAIN_WITH_NCCL} (${NCCL_INCLUDE_DIR}), "
               "nvJPEG ${CVTRAIN_WITH_NVJPEG} (${NVJPEG_INCLUDE_DIR})")

if(CVTRAIN_BUILD_TESTS)
  find_package(Catch2 REQUIRED)
endif()

# TORCH_CXX_FLAGS carries the C++ ABI define; every target compiles with it (DESIGN.md).
separate_arguments(CVTRAIN_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")
