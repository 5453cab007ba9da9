// What the tuner and its evaluation worker (worker_process.h) say to each other: one JSON object
// per line. The tuner asks for an evaluation or a re-measurement; the worker first says which
// device it opened, then reports each stage and each fuzz case as it starts (so the tuner's
// watchdog can tell a slow stage from a hang) and finally the result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/property_runner.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/kernel_timer.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/records.h"

namespace tiletune {

// Evaluate one configuration at one shape: fuzz it (unless it passed earlier in this tune), verify
// it at the full shape, time it. A fuzz worker (fuzz_pool.h) is asked to fuzz only.
struct EvaluationRequest {
  TemplateRecord tmpl;  // the source travels along: the worker may have started after it changed
  std::string config;
  GemmShape shape;
  Transposes op;  // verified and timed with these transposes, in the build that serves them
  std::int64_t batch = 1;  // over a strided batch of this many (packed), in the build serving it
  bool fuzz = true;
  bool measure = true;  // verify and time after the fuzz; false: stop there (the reply's result
                        // then only counts when the fuzz failed)
  FuzzSettings fuzz_settings;
  TimingSettings timing;
  std::uint64_t data_seed = 1;

  // The full problem verified and timed: the shape with its transposes and batch, operands packed.
  GemmProblem problem() const { return GemmProblem::packed(shape, {op, batch}); }
};

// One configuration of a re-measurement: of which of the request's templates, and its text.
struct RemeasuredConfig {
  std::size_t tmpl = 0;  // index into RemeasureRequest::templates
  std::string config;
};

// Time the best few configurations again, together, in interleaved rounds: each gets the same
// clocks and temperature, so the ranking among them is not decided by when each was first timed.
// They may be of several templates (the winners of each template tuned at a shape), whose
// sources travel once each.
struct RemeasureRequest {
  std::vector<TemplateRecord> templates;
  std::vector<RemeasuredConfig> configs;
  GemmShape shape;
  Transposes op;
  std::int64_t batch = 1;
  TimingSettings timing;  // of one configuration in one round
  int rounds = 5;
  std::uint64_t data_seed = 1;

  GemmProblem problem() const { return GemmProblem::packed(shape, {op, batch}); }
};

struct WorkerRequest {
  enum class Kind { evaluate, remeasure } kind = Kind::evaluate;
  EvaluationRequest evaluate;
  RemeasureRequest remeasure;
};

struct WorkerReply {
  enum class Kind {
    ready,    // device: the worker is up on this device
    stage,    // text: the stage that starts now
    progress, // text: the fuzz case that starts now (the watchdog measures the silence between
              // cases, so a long fuzz that makes progress is never taken for a hang)
    result,   // result, fuzz_passed
    timings,  // timings: one per configuration of a RemeasureRequest, in its order
    fatal,    // text: the worker cannot work here (no GPU, no NVRTC); it exits after this
  } kind = Kind::stage;
  DeviceProperties device;
  std::string text;
  ResultRecord result;
  bool fuzz_passed = false;  // the configuration passed its fuzz (run now or earlier)
  bool worker_exits = false;  // after this result: its CUDA context is lost, the tuner restarts it
  std::vector<Timing> timings;
};

std::string encode(const WorkerRequest& request);
std::string encode(const WorkerReply& reply);
// Both throw std::runtime_error ("malformed worker message: ...") on a line they cannot read.
WorkerRequest decode_request(const std::string& line);
WorkerReply decode_reply(const std::string& line);

}  // namespace tiletune
