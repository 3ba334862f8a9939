#pragma once
/// @file
/// `darkbert::Tensor<T, N>`: an xtensor container (all of xtensor's functions apply) whose storage is
/// 64-byte aligned. Alignment matters for reproducibility: vectorised reductions peel a different number
/// of leading elements at a different alignment, which changes rounding. With every buffer aligned the
/// same way, the same input gives bit-identical output on every run.

#include <cstddef>  // std::size_t
#include <cstdlib>  // std::aligned_alloc, std::free
#include <new>      // std::bad_alloc

#include <xtensor/xtensor.hpp>

namespace darkbert {

/// Standard allocator whose blocks start on a 64-byte boundary (the storage of Tensor).
/// @code
/// std::vector<float, darkbert::AlignedAllocator<float>> buffer(1024);  // buffer.data() % 64 == 0
/// @endcode
template <class T>
struct AlignedAllocator {
  using value_type = T;  ///<  element type
  static constexpr std::size_t alignment = 64;  ///<  bytes; one cache line, one AVX-512 vector

  AlignedAllocator() = default;
  /// Converts from an allocator of another type (stateless).
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}

  /// Room for n elements, 64-byte aligned; throws std::bad_alloc.
  T* allocate(std::size_t n) {
    if (n == 0) return nullptr;
    const std::size_t bytes = (n * sizeof(T) + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, bytes);
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  /// Frees a block from allocate().
  void deallocate(T* p, std::size_t) noexcept { std::free(p); }

  /// Always equal (stateless).
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
  /// Never unequal (stateless).
  template <class U>
  bool operator!=(const AlignedAllocator<U>&) const noexcept { return false; }
  /// The same allocator for elements of type U.
  template <class U>
  struct rebind {
    using other = AlignedAllocator<U>;  ///<  the allocator for U
  };
};

/// N-dimensional row-major xtensor with 64-byte aligned storage.
/// @code
/// darkbert::Tensor<float, 3> t = xt::zeros<float>({2, 3, 4});
/// @endcode
template <class T, std::size_t N>
using Tensor = xt::xtensor_container<xt::uvector<T, AlignedAllocator<T>>, N, xt::layout_type::row_major>;

}  // namespace darkbert
