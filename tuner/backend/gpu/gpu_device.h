// The GPU tiletune runs on: its identity and limits, and its primary context made current.
#pragma once

#include "tuner/backend/device_properties.h"
#include "tuner/backend/gpu/cuda_driver.h"
#include "tuner/core/records.h"

namespace tiletune {

// The identity and limits of a device (its context need not be current).
DeviceProperties read_device_properties(CUdevice device, int ordinal);

// The device as the database keys it, with the NVRTC found.
GpuRecord make_gpu_record(const DeviceProperties& device);

class GpuDevice {
 public:
  // Opens device `ordinal` (default: $TILETUNE_DEVICE or 0) and makes its primary context
  // current on the calling thread. Throws GpuUnavailable when there is none.
  explicit GpuDevice(int ordinal = default_ordinal());
  ~GpuDevice();
  GpuDevice(const GpuDevice&) = delete;
  GpuDevice& operator=(const GpuDevice&) = delete;

  const DeviceProperties& properties() const { return properties_; }
  // Makes the context current on the calling thread (each worker thread needs it once).
  void make_current() const;

  static int default_ordinal();

 private:
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  DeviceProperties properties_;
};

}  // namespace tiletune
