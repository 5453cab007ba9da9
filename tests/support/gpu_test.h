// The base of tests that need a GPU: one GpuDevice for the whole process (ctest runs each test in
// a process of its own), made current before each test; without a GPU every test skips, saying why.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "tuner/backend/gpu/gpu_device.h"

namespace tiletune::testing_support {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    static std::unique_ptr<GpuDevice> device;
    static std::string unavailable;
    if (!device && unavailable.empty()) {
      try {
        device = std::make_unique<GpuDevice>();
      } catch (const GpuUnavailable& e) {
        unavailable = e.what();
      }
    }
    if (!device) GTEST_SKIP() << "no GPU: " << unavailable;
    device_ = device.get();
    device_->make_current();
  }

  GpuDevice* device_ = nullptr;
};

}  // namespace tiletune::testing_support
