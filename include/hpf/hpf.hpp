// libhpf: mixed-precision graph runtime. One include for the whole public C++ API.
#pragma once

#include "hpf/cpu_info.hpp"
#include "hpf/divergence.hpp"
#include "hpf/dtype.hpp"
#include "hpf/fingerprint.hpp"
#include "hpf/graph.hpp"
#include "hpf/hwdb.hpp"
#include "hpf/kernel_cache.hpp"
#include "hpf/log.hpp"
#include "hpf/models.hpp"
#include "hpf/npy.hpp"
#include "hpf/plugin_host.hpp"
#include "hpf/reference.hpp"
#include "hpf/session.hpp"
#include "hpf/status.hpp"
#include "hpf/tensor.hpp"
#include "hpf/version.hpp"
