# Sets `expected_kernel_path` to the kernel path darkbert's run-time dispatch picks on this machine:
# avx512 when /proc/cpuinfo lists AVX-512 F/BW/DQ/VL and FMA, else avx2 when it lists AVX2 and FMA, else
# blas (core/kernel_dispatch.hpp); and `runnable_kernel_paths` to every path this machine can run
# (DARKBERT_KERNEL=<path>), the picked one first.
# Included by the scripts that check the dispatch (tests/cli_kernel_paths.cmake, packaging/check.cmake) and
# by tests/CMakeLists.txt, which runs the numerical tests once per runnable path.
set(expected_kernel_path blas)
set(runnable_kernel_paths blas)
if(EXISTS /proc/cpuinfo)
  file(READ /proc/cpuinfo cpuinfo)
  if(cpuinfo MATCHES " avx2" AND cpuinfo MATCHES " fma")
    set(expected_kernel_path avx2)
    set(runnable_kernel_paths avx2 blas)
  endif()
  if(cpuinfo MATCHES "avx512f" AND cpuinfo MATCHES "avx512bw" AND cpuinfo MATCHES "avx512dq"
     AND cpuinfo MATCHES "avx512vl" AND cpuinfo MATCHES " fma")
    set(expected_kernel_path avx512)
    set(runnable_kernel_paths avx512 avx2 blas)
  endif()
endif()
