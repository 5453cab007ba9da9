// NVRTC, opened at run time: compiles one configuration of a template to a cubin for one GPU
// architecture and keeps ptxas's resource report (registers, shared memory, spills).
//
// Like the driver, libnvrtc is opened on first use rather than linked, so that commands which do
// not compile (query, list) run on machines without a CUDA toolkit.
#pragma once

#include <string>
#include <vector>

#include "tuner/backend/backend_errors.h"  // CompileError
#include "tuner/backend/entry_contract.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// NVRTC cannot be loaded, or an NVRTC call failed outside compilation itself.
class NvrtcError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What ptxas said about the entry point ("Used 40 registers, ... 8448 bytes smem").
struct PtxasReport {
  int registers = 0;
  int static_shared_bytes = 0;
  int stack_frame_bytes = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

// Extracts the report for `entry` from an NVRTC log compiled with ptxas -v.
PtxasReport parse_ptxas_report(const std::string& log, const std::string& entry);

struct CompiledKernelImage {
  std::string arch;          // "sm_90"
  std::vector<char> cubin;
  std::string log;           // NVRTC's whole log (warnings and the ptxas report)
  PtxasReport report;
};

// "13.0": the version of the NVRTC library found. Throws NvrtcError when there is none.
std::string nvrtc_version();

// The NVRTC options of every compile for arch (architecture, language standard, line info, the
// ptxas report), then `extra_options`.
std::vector<std::string> nvrtc_options(const std::string& arch,
                                       const std::vector<std::string>& extra_options = {});

// The exact options compile_configuration passes NVRTC for this configuration on a GPU of target
// arch: the common ones (for the template's architecture-specific target, sm_90a, where it
// declares one) and the parameters' macros. One function, so that a cache keyed by the options (the cubin
// cache) cannot drift from what is compiled.
std::vector<std::string> nvrtc_options(const KernelTemplate& tmpl, const Configuration& config,
                                       const std::string& arch);

// The program name compile_configuration gives NVRTC: the template file's name, or NAME.cu for a
// template parsed from a string. It appears in the log and in the cubin's line info.
std::string nvrtc_file_name(const KernelTemplate& tmpl);

// Compiles CUDA source for arch with extra NVRTC options; `entry` names the function whose ptxas
// report is kept. Throws CompileError (message: `what` plus "does not compile") or NvrtcError.
CompiledKernelImage compile_cuda_source(const std::string& source, const std::string& file_name,
                                        const std::vector<std::string>& extra_options,
                                        const std::string& arch, const std::string& entry,
                                        const std::string& what);

// compile_cuda_source for a kernel of tiletune's own (the GPU reference, the operand copy), once
// per process and architecture: a later call with the same file name and arch returns the first
// call's image (NVRTC takes a fifth of a second each time). A compile that throws is not kept.
const CompiledKernelImage& compile_cuda_source_once(const std::string& source,
                                                    const std::string& file_name,
                                                    const std::string& arch,
                                                    const std::string& entry,
                                                    const std::string& what);

// Compiles the configuration for arch ("sm_90", "sm_80", ...). Throws CompileError with NVRTC's
// log when the source does not compile, EntryContractError (a CompileError, entry_contract.h) when
// the code has no kernel named as the template's entry or one whose parameters are not the
// contract's, NvrtcError when NVRTC itself fails.
CompiledKernelImage compile_configuration(const KernelTemplate& tmpl, const Configuration& config,
                                          const std::string& arch);

// Checks NVRTC's output for `entry`: throws EntryContractError (what: "tiled [TILE=16]") when the
// cubin defines no kernel of that name, or when its parameter records say it takes other
// parameters than the contract's. A cubin this reader cannot read is left to the GPU's check.
void check_compiled_entry(const CompiledKernelImage& image, const std::string& entry,
                          const std::string& what, EntryForm form = {});

}  // namespace tiletune
