#pragma once
// darkbert::Tensor<T, N>: an xtensor container (all of xtensor's functions apply) whose storage is
// 64-byte aligned. Alignment matters for reproducibility: vectorised reductions peel a different number
// of leading elements at a different alignment, which changes rounding. With every buffer aligned the
// same way, the same input gives bit-identical output on every run.

#include <cstddef>  // std::size_t
#include <cstdlib>  // std::aligned_alloc, std::free
#include <new>      // std::bad_alloc

#include <xtensor/xtensor.hpp>

namespace darkbert {

template <class T>
struct AlignedAllocator {
  using value_type = T;
  static constexpr std::size_t alignment = 64;

  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n == 0) return nullptr;
    const std::size_t bytes = (n * sizeof(T) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const noexcept { return false; }
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U>;
  };
};

template <class T, std::size_t N>
using Tensor = xt::xtensor_container<xt::uvector<T, AlignedAllocator<T>>, N, xt::layout_type::row_major>;

}  // namespace darkbert
