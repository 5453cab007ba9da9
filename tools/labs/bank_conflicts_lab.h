// tiletune lab bank-conflicts: the tutorials' shared-memory bank conflicts, measured on this GPU.
//
// Four kernels (tools/labs/bank_conflicts.cu) move the same data through a 32 x 32 shared tile,
// row-wise (stride 1), column-wise (stride 32), column-wise in a padded [32][33] tile and
// column-wise through an XOR swizzle. Each is verified, timed (median of CUDA-event runs) and,
// where Nsight Compute can read counters, counted: shared requests (ideal wavefronts), wavefronts,
// excessive wavefronts and the hardware bank-conflict counter. The claims: no excessive wavefronts
// at stride 1, padded and swizzled; 31 excessive wavefronts per request (32-way) at stride 32; and
// stride 32 slower than the other three.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/labs/lab_claims.h"
#include "tools/labs/lab_counters.h"
#include "tuner/backend/gpu/gpu_device.h"
#include "tuner/backend/gpu/kernel_timer.h"

namespace tiletune::labs {

struct SharedAccessVariant {
  const char* name;    // "stride32": what `tiletune lab-kernel bank-conflicts` takes
  const char* entry;   // "bank_stride32"
  const char* layout;  // "tile[col][row] in [32][32]"
};
// stride1, stride32, padded, swizzled
extern const std::vector<SharedAccessVariant> kSharedAccessVariants;

// One variant as measured; a counter is empty when it could not be read.
struct SharedAccessMeasurement {
  std::string variant;
  Timing timing;
  // The ideal wavefronts: one per request, as every access is a whole warp's 4-byte load or store.
  std::optional<double> requests;
  std::optional<double> wavefronts;          // shared wavefronts of all instructions
  std::optional<double> excessive;           // wavefronts beyond the ideal (Source Counters)
  std::optional<double> hardware_conflicts;  // the hardware bank-conflict counter, ld + st
};

struct BankConflictLab {
  std::string gpu;
  std::vector<SharedAccessMeasurement> rows;
  std::string why_no_counters;  // empty when the counters were read
  std::vector<Claim> claims;
};

// The ncu metrics the lab asks for (tuner/profiling/counter_metrics.h).
std::vector<std::string> shared_access_metrics();

// Fills the counters of a measurement from ncu's metrics; one that is missing stays empty.
void take_shared_access_counters(const std::map<std::string, double>& ncu_values,
                                 SharedAccessMeasurement& row);

// The claims, judged on the rows (one per variant, by name). A counter claim whose counters are
// missing is not measured, with `why_no_counters` (or the missing counter) as the reason.
std::vector<Claim> bank_conflict_claims(const std::vector<SharedAccessMeasurement>& rows,
                                        const std::string& why_no_counters);

// Compiles, verifies and times every variant on the device, then counts each with `counters`.
// Throws std::runtime_error when a variant computes a wrong result (nothing is timed then).
BankConflictLab run_bank_conflict_lab(const GpuDevice& device, const CounterReader& counters);

// The measurements table, then the claims table.
std::string format_bank_conflict_lab(const BankConflictLab& lab);
nlohmann::json bank_conflict_lab_json(const BankConflictLab& lab);

// `tiletune lab-kernel bank-conflicts VARIANT`: one launch of the variant on the GPU, for ncu to
// count. Throws LabArgumentError for an unknown variant before opening the GPU.
void launch_bank_conflict_kernel(const std::string& variant);

}  // namespace tiletune::labs
