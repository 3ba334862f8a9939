#pragma once

#define DARKBERT_VERSION_MAJOR 0
#define DARKBERT_VERSION_MINOR 1
#define DARKBERT_VERSION_PATCH 0

namespace darkbert {
inline constexpr const char* version = "0.1.0";
}  // namespace darkbert
