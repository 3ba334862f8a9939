#pragma once
/// @file
/// darkbert's version: the one place it is written. CMake's project() reads the three macros below from
/// this file, and `packaging/lint_manifests.py` checks that the vcpkg and Conan manifests and
/// CHANGELOG.md agree with it.
///
/// @code
/// std::cout << "darkbert " << darkbert::version << "\n";                 // "darkbert 0.1.0"
/// static_assert(darkbert::version_major == 0);
/// #if DARKBERT_VERSION_MAJOR == 0 && DARKBERT_VERSION_MINOR < 2          // in the preprocessor too
/// @endcode

#define DARKBERT_VERSION_MAJOR 0  ///< incremented for incompatible API changes (after 1.0)
#define DARKBERT_VERSION_MINOR 1  ///< incremented for new features; before 1.0 also for API changes
#define DARKBERT_VERSION_PATCH 0  ///< incremented for fixes

/// @cond DETAIL
#define DARKBERT_DETAIL_STRINGIFY(x) #x
#define DARKBERT_DETAIL_VERSION_STRING(major, minor, patch) \
  DARKBERT_DETAIL_STRINGIFY(major) "." DARKBERT_DETAIL_STRINGIFY(minor) "." DARKBERT_DETAIL_STRINGIFY(patch)
/// @endcond

namespace darkbert {

inline constexpr int version_major = DARKBERT_VERSION_MAJOR;  ///< see DARKBERT_VERSION_MAJOR
inline constexpr int version_minor = DARKBERT_VERSION_MINOR;  ///< see DARKBERT_VERSION_MINOR
inline constexpr int version_patch = DARKBERT_VERSION_PATCH;  ///< see DARKBERT_VERSION_PATCH

/// "MAJOR.MINOR.PATCH", built from the macros above.
inline constexpr const char* version =
    DARKBERT_DETAIL_VERSION_STRING(DARKBERT_VERSION_MAJOR, DARKBERT_VERSION_MINOR, DARKBERT_VERSION_PATCH);

}  // namespace darkbert
