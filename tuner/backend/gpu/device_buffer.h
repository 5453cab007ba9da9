// Device memory owned RAII-style, with typed copies to and from the host.
#pragma once

#include <cstddef>
#include <vector>

#include "tuner/backend/gpu/cuda_driver.h"

namespace tiletune {

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  CUdeviceptr get() const { return pointer_; }
  std::size_t bytes() const { return bytes_; }

  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;

  template <typename T>
  static DeviceBuffer from(const std::vector<T>& host) {
    DeviceBuffer buffer(host.size() * sizeof(T));
    buffer.upload(host.data(), host.size() * sizeof(T));
    return buffer;
  }
  template <typename T>
  void download_into(std::vector<T>& host) const {
    download(host.data(), host.size() * sizeof(T));
  }

 private:
  CUdeviceptr pointer_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace tiletune
