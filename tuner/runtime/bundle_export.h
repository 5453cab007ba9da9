// `tiletune export`: the chosen records of a database written as a bundle (bundle.h), a folder or
// a C++ source file that embeds it.
//
// What is exported: for each GPU x template x shape (current template versions, status ok), the
// N fastest configurations, plus the fastest one that fits any problem (its requirements read
// none of M, N, K, lda, ldb, ldc) when those N lack one, so that the library's requirement
// fallback works from a bundle too. Each exported configuration is compiled for every distinct
// architecture of the exported GPUs, through the user's cubin cache.
//
// With them goes each GPU and template's performance model (performance_model.h) fitted on the
// whole database, for the configurations kept (RecordSet::models): fitted again on the few records
// a bundle keeps, most configurations would be seen at one or two shapes and lent the template's
// typical coefficients, and the library would choose worse at shapes nobody tuned than from the
// database. A workload (the shapes a deployment calls) also keeps the configuration the database's
// model chooses at each of its shapes, so that the bundle serves them as the database would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tuner/backend/gpu/cubin_cache.h"
#include "tuner/runtime/bundle.h"

namespace tiletune::runtime {

// What the user asked cannot be exported (no record matches, a bad folder or name): one line.
class ExportInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A configuration that does not compile for an architecture: one line, the export fails.
class ExportCompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ExportSelection {
  std::vector<std::string> templates;  // names; empty: all
  std::vector<std::string> gpus;       // names; empty: all
  int per_shape = 4;
  // Shapes whose packed problem the database's model chooses for (those not recorded): the
  // chosen configuration's record nearest each is kept too.
  std::vector<GemmShape> workload;
};

// The records to export, with the models fitted on `all` for the configurations kept: throws
// ExportInputError when a named template or GPU has no record, or nothing is left.
RecordSet select_for_export(const RecordSet& all, const ExportSelection& selection);

// Whether the configuration fits every problem: each requirement holds with the parameters alone.
bool fits_any_problem(const KernelTemplate& tmpl, const Configuration& config);

// A bundle's files by path relative to its folder.
using BundleFiles = std::map<std::string, std::string>;

struct BundleContents {
  BundleFiles files;
  int cubins = 0;
  std::uint64_t cubin_bytes = 0;
};

// Whether a bundle has cubins: without them (the CPU backend's, or the tests') every configuration
// is compiled from its source on first use, as from a database.
enum class ExportCubins { compiled, none };

// The manifest, sources and cubins of the records. Compiles what `cache` (if any) lacks with
// NVRTC on `threads` threads (0: one per core). Throws ExportCompileError, NvrtcError.
BundleContents build_bundle(const RecordSet& records, const std::string& database,
                            std::optional<CubinCache> cache, unsigned threads = 0,
                            ExportCubins cubins = ExportCubins::compiled);

// Writes the files into `folder`, created if missing. An existing folder must be empty or hold a
// previous bundle. The switch is atomic for readers: the files are named by their content and the
// manifest is renamed into place last, so a concurrent open sees the old bundle or the new one,
// whole. The previous bundle's files stay until the next export (a reader that read its manifest
// just before the switch still finds them); files of older exports go. Only files export wrote go:
// a name export gives with its content's hash, or a name an older tiletune gave that the previous
// manifest lists with its content's hash; the user's files stay. Never writes through a symbolic
// link to a folder. Throws ExportInputError for any other folder, or a linked sources/ or cubins/.
void write_bundle_folder(const BundleFiles& files, const std::filesystem::path& folder);

// Writes folder/SYMBOL.cpp defining `const tiletune::EmbeddedBundle& SYMBOL()` with every file as
// a byte array; returns its path. Throws ExportInputError when the symbol is no C identifier.
std::filesystem::path write_bundle_cpp(const BundleFiles& files, const std::filesystem::path& folder,
                                       const std::string& symbol);

}  // namespace tiletune::runtime
