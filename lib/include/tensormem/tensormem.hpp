// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <tensormem/dmabuf_storage.hpp>
#include <tensormem/host_pin.hpp>
#include <tensormem/log.hpp>
#include <tensormem/map_state.hpp>
#include <tensormem/pixel_format.hpp>
#include <tensormem/result.hpp>
#include <tensormem/storage.hpp>
#include <tensormem/tensor.hpp>
#include <tensormem/types.hpp>
