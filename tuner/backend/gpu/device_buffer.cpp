#include "tuner/backend/gpu/device_buffer.h"

#include <stdexcept>
#include <utility>

namespace tiletune {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  check_cuda(cuda_driver().cuMemAlloc(&pointer_, bytes == 0 ? 1 : bytes), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  // A failure here (a lost context) must not throw out of a destructor; the memory goes with it.
  if (pointer_ != 0) cuda_driver().cuMemFree(pointer_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, 0)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_ != 0) cuda_driver().cuMemFree(pointer_);
    pointer_ = std::exchange(other.pointer_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > bytes_) throw std::out_of_range("DeviceBuffer::upload beyond the buffer");
  check_cuda(cuda_driver().cuMemcpyHtoD(pointer_ + offset, host, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > bytes_) throw std::out_of_range("DeviceBuffer::download beyond the buffer");
  check_cuda(cuda_driver().cuMemcpyDtoH(host, pointer_ + offset, bytes), "cuMemcpyDtoH");
}

}  // namespace tiletune
