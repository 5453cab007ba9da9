// The executor of one configuration on a backend: the one place below the command line where
// the fuzzer and the tuner's evaluator meet "GPU or CPU".
#pragma once

#include <chrono>
#include <memory>

#include "fuzz/gemm_executor.h"
#include "tuner/backend/backend.h"

namespace tiletune {

// The configuration compiled (or found compiled) and loaded on `backend`, ready to run cases.
// Throws CompileError (EntryContractError among them) when it does not build or load, and
// UnsupportedOnBackend for what the backend cannot run. `kernel_timeout`: on the GPU, how long a
// case's kernel may run (GpuExecutor); zero waits for ever.
std::unique_ptr<GemmExecutor> make_executor(Backend& backend, const KernelTemplate& tmpl,
                                            const Configuration& config,
                                            std::chrono::milliseconds kernel_timeout = {});

}  // namespace tiletune
