#include "tuner/pipeline/worker_protocol.h"

#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace tiletune {

using nlohmann::json;

// Field lists for nlohmann's to_json/from_json, found by argument-dependent lookup.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GemmShape, m, n, k)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TemplateRecord, name, source_hash, path, source)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimingSettings, warmup_runs, min_runs, max_runs, target_seconds)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Timing, median_ms, min_ms, max_ms, runs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(DeviceProperties, name, ordinal, cc_major, cc_minor, sm_count,
                                   clock_khz, memory_bytes, driver_version, max_threads_per_block,
                                   max_block_dim, max_grid_dim, max_shared_bytes_per_block,
                                   max_shared_bytes_per_block_optin, max_registers_per_block,
                                   warp_size, max_registers_per_sm,
                                   max_threads_per_sm, l2_cache_bytes)

void to_json(json& j, const Transposes& op) { j = op.to_string(); }
void from_json(const json& j, Transposes& op) {
  const std::optional<Transposes> parsed = Transposes::parse(j.get<std::string>());
  if (!parsed) throw std::invalid_argument("transposes '" + j.get<std::string>() + "' not understood");
  op = *parsed;
}

void to_json(json& j, const ResultStatus& status) { j = to_string(status); }
void from_json(const json& j, ResultStatus& status) { status = parse_result_status(j.get<std::string>()); }

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ResultRecord, template_name, template_hash, config, shape, op,
                                   batch, status, detail, median_ms, min_ms, max_ms, runs, tflops,
                                   registers, static_shared_bytes, dynamic_shared_bytes, spill_bytes)

void to_json(json& j, const EvaluationRequest& r) {
  j = json{{"template", r.tmpl}, {"config", r.config}, {"shape", r.shape}, {"op", r.op}, {"batch", r.batch}, {"fuzz", r.fuzz},
           {"measure", r.measure}, {"cases", r.fuzz_settings.cases}, {"seed", r.fuzz_settings.seed},
           {"timing", r.timing}, {"data_seed", r.data_seed}};
}
void from_json(const json& j, EvaluationRequest& r) {
  j.at("template").get_to(r.tmpl);
  j.at("config").get_to(r.config);
  j.at("shape").get_to(r.shape);
  j.at("op").get_to(r.op);
  j.at("batch").get_to(r.batch);
  j.at("fuzz").get_to(r.fuzz);
  j.at("measure").get_to(r.measure);
  j.at("cases").get_to(r.fuzz_settings.cases);
  j.at("seed").get_to(r.fuzz_settings.seed);
  j.at("timing").get_to(r.timing);
  j.at("data_seed").get_to(r.data_seed);
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RemeasuredConfig, tmpl, config)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RemeasureRequest, templates, configs, shape, op, batch, timing, rounds,
                                   data_seed)

namespace {

template <class Decode>
auto decoding(const std::string& line, Decode decode) {
  try {
    return decode(json::parse(line));
  } catch (const std::exception& e) {
    throw std::runtime_error("malformed worker message: " + std::string(e.what()) + ": " +
                             line.substr(0, 200));
  }
}

}  // namespace

std::string encode(const WorkerRequest& request) {
  if (request.kind == WorkerRequest::Kind::evaluate) return json{{"evaluate", request.evaluate}}.dump();
  return json{{"remeasure", request.remeasure}}.dump();
}

WorkerRequest decode_request(const std::string& line) {
  return decoding(line, [](const json& j) {
    WorkerRequest request;
    if (j.contains("evaluate")) {
      j.at("evaluate").get_to(request.evaluate);
    } else {
      request.kind = WorkerRequest::Kind::remeasure;
      j.at("remeasure").get_to(request.remeasure);
    }
    return request;
  });
}

std::string encode(const WorkerReply& reply) {
  switch (reply.kind) {
    case WorkerReply::Kind::ready: return json{{"ready", reply.device}}.dump();
    case WorkerReply::Kind::stage: return json{{"stage", reply.text}}.dump();
    case WorkerReply::Kind::progress: return json{{"progress", reply.text}}.dump();
    case WorkerReply::Kind::result:
      return json{{"result", reply.result}, {"fuzz_passed", reply.fuzz_passed},
                  {"worker_exits", reply.worker_exits}}.dump();
    case WorkerReply::Kind::timings: return json{{"timings", reply.timings}}.dump();
    case WorkerReply::Kind::fatal: return json{{"fatal", reply.text}}.dump();
  }
  return "{}";
}

WorkerReply decode_reply(const std::string& line) {
  return decoding(line, [](const json& j) {
    WorkerReply reply;
    if (j.contains("ready")) {
      reply.kind = WorkerReply::Kind::ready;
      j.at("ready").get_to(reply.device);
    } else if (j.contains("stage")) {
      reply.kind = WorkerReply::Kind::stage;
      j.at("stage").get_to(reply.text);
    } else if (j.contains("progress")) {
      reply.kind = WorkerReply::Kind::progress;
      j.at("progress").get_to(reply.text);
    } else if (j.contains("result")) {
      reply.kind = WorkerReply::Kind::result;
      j.at("result").get_to(reply.result);
      j.at("fuzz_passed").get_to(reply.fuzz_passed);
      j.at("worker_exits").get_to(reply.worker_exits);
    } else if (j.contains("timings")) {
      reply.kind = WorkerReply::Kind::timings;
      j.at("timings").get_to(reply.timings);
    } else {
      reply.kind = WorkerReply::Kind::fatal;
      j.at("fatal").get_to(reply.text);
    }
    return reply;
  });
}

}  // namespace tiletune
