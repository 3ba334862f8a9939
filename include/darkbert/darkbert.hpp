#pragma once
// darkbert — everything in one include. Prefer the individual headers in larger projects.

#include "version.hpp"

#include "core/error.hpp"
#include "core/matrix.hpp"
#include "io/checkpoint.hpp"
#include "io/safetensors.hpp"
#include "model/batch.hpp"
#include "model/case_file.hpp"
#include "model/config.hpp"
#include "model/transformer.hpp"
#include "hooks/hook_point.hpp"
#include "hooks/hooks.hpp"
#include "hooks/masking_policy.hpp"
