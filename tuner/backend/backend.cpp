#include "tuner/backend/backend.h"

#include <stdexcept>

namespace tiletune {

const char* backend_kind_name(Backend::Kind kind) {
  return kind == Backend::Kind::gpu ? "gpu" : "cpu";
}

Backend::Kind parse_backend_kind(const std::string& name) {
  if (name == "gpu") return Backend::Kind::gpu;
  if (name == "cpu") return Backend::Kind::cpu;
  throw std::invalid_argument("unknown backend '" + name + "' (gpu or cpu)");
}

}  // namespace tiletune
