// A GemmExecutor that says which case it is about to run before running it. A process watching
// from outside learns that a fuzz makes progress (the tuner's watchdog measures silence between
// cases, not the length of a fuzz) and, when the kernel crashes or hangs, on which case.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "fuzz/gemm_executor.h"

namespace tiletune {

class AnnouncingExecutor : public GemmExecutor {
 public:
  using Announce = std::function<void(const GemmCase&)>;

  // Runs on `inner`, which must outlive this executor.
  AnnouncingExecutor(GemmExecutor& inner, Announce announce)
      : inner_(inner), announce_(std::move(announce)) {}
  // Runs on `inner`, which it keeps.
  AnnouncingExecutor(std::unique_ptr<GemmExecutor> inner, Announce announce)
      : owned_(std::move(inner)), inner_(*owned_), announce_(std::move(announce)) {}

  void run(const GemmCase& gemm_case, GemmOperands& operands) override {
    if (announce_) announce_(gemm_case);
    inner_.run(gemm_case, operands);
  }
  std::string backend_name() const override { return inner_.backend_name(); }
  std::string case_note(const GemmCase& gemm_case) const override {
    return inner_.case_note(gemm_case);
  }

 private:
  std::unique_ptr<GemmExecutor> owned_;
  GemmExecutor& inner_;
  Announce announce_;
};

}  // namespace tiletune
