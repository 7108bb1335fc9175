// libhpf: mixed-precision graph runtime. One include for the whole public C++ API.
#pragma once

#include "hpf/divergence.hpp"
#include "hpf/dtype.hpp"
#include "hpf/graph.hpp"
#include "hpf/log.hpp"
#include "hpf/models.hpp"
#include "hpf/reference.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"
#include "hpf/version.hpp"
