#pragma once
/// @file
/// A process-wide allocator setting for long training runs.
///
/// glibc serves every allocation above its mmap threshold (at most 32 MiB) with a fresh mmap and returns
/// it on free. A training step allocates such buffers every time: BERT's masked-LM logits are
/// [masked positions × vocabulary], about 75 MB at batch 32, and their row count changes from step to step.
/// Every step then pays the kernel for zero-filled pages: 10 % of a `mini` pretraining step, measured
/// with perf. Raising the thresholds keeps freed blocks in the heap, so the next step reuses pages that are
/// already mapped. The library never calls this itself (it is a process setting); programs that train call
/// it once at the start, as `darkbert`'s main does.

#include <cstdlib>  // any C library header defines __GLIBC__, which the test below needs

#if defined(__GLIBC__)
#include <malloc.h>  // mallopt, M_MMAP_THRESHOLD, M_TRIM_THRESHOLD
#endif

namespace darkbert {

/// Keeps freed large blocks for reuse instead of returning them to the kernel (glibc only; elsewhere a
/// no-op). Returns whether the setting took effect.
inline bool reuse_freed_memory() {
#if defined(__GLIBC__)
  constexpr int mmap_threshold = 512 << 20;  // blocks up to 512 MiB come from the heap
  constexpr int trim_threshold = 1 << 30;    // keep up to 1 GiB of free heap mapped
  return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
#else
  return false;
#endif
}

}  // namespace darkbert
