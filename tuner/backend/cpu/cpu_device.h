// The device the CPU backend stands for: its limits and the name its times are recorded under.
#pragma once

#include "tuner/backend/device_properties.h"

namespace tiletune {

// The limits the CPU backend enforces, under the name "CPU backend": what the tuner prunes
// against and records CPU results under.
DeviceProperties cpu_backend_device();

}  // namespace tiletune
