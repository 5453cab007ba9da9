// A kernel template: one CUDA C++ file with its tuning declarations in comment lines.
//
//   // tiletune: name tiled                     (an identifier, optional; default: the file name's
//                                               stem, other characters made '_')
//   // tiletune: entry tiled_gemm               (the extern "C" __global__ entry point)
//   // tiletune: param TILE 8 16 32             (a tunable parameter and its candidate values)
//   // tiletune: require !(PAD && SWIZZLE)      (a constraint; every one must be non-zero)
//   // tiletune: tune_if BM < 2 * max(M, 32)    (a tuning limit: where the configuration is worth
//                                               measuring; it stays correct elsewhere)
//   // tiletune: block TILE, TILE               (block size x[, y[, z]]; missing ones are 1)
//   // tiletune: grid ceil_div(N, TILE), ceil_div(M, TILE)
//   // tiletune: shared 0                       (dynamic shared memory in bytes; default 0)
//   // tiletune: tile BM, BN, BK                (the rows and columns of C one block computes and,
//                                               optionally, the step it walks K in, of the
//                                               parameters alone: for the performance model, where
//                                               the grid does not count tiles (a persistent
//                                               schedule such as stream-K, whose blocks compute
//                                               whole tiles) and where K is not a whole number of
//                                               steps; default: none)
//   // tiletune: zero_output SPLIT_K > 1        (the launcher clears C's M x N first, for kernels
//                                               that add into C; default 0)
//   // tiletune: precision tf32                 (fp32, tf32 or tf32x3: what the inputs are rounded
//                                               to before they are multiplied; default fp32)
//   // tiletune: arch sm_90a                    (the template uses instructions of one GPU
//                                               family only, such as Hopper's wgmma: it compiles
//                                               for that target, on GPUs of its compute
//                                               capability alone; default: any GPU's own)
//   // tiletune: tensor_map A tf32 swizzle128 32, BM
//                                              (the launcher describes operand A or B to the
//                                               GPU's tensor memory accelerator (TMA) and passes
//                                               the description to the entry, after the nine
//                                               contract parameters, as a tt_tensor_map
//                                               (<tiletune/tensor_map.h>), in declaration order;
//                                               element fp32 or tf32 (the copy rounds to TF32,
//                                               to nearest even), layout dense or swizzle128 (the
//                                               128-byte swizzle of wgmma's operands), then the
//                                               box a copy brings: its inner (contiguous) and
//                                               outer extent in elements. TMA needs the operand's
//                                               leading dimension a multiple of 4 floats: the
//                                               declaration adds `require lda % 4 == 0` (or ldb),
//                                               unless its layout is followed by copy_unaligned:
//                                               then the launcher copies such an operand into
//                                               aligned rows first (operand_staging.h).
//                                               `tensor_map B op_b=t ...` (A op_a=t) is the map
//                                               of the builds that store the operand transposed,
//                                               over the stored matrix, in its plain map's place)
//   // tiletune: copy_unaligned B !OP_B && ceil_div(M, BM) >= 16
//                                              (where the expression holds for the build and the
//                                               shape, the launcher copies operand A or B, as the
//                                               build stores it, into rows that start 16-byte
//                                               aligned when its own do not, and the kernel reads
//                                               the copy: for a kernel whose vector loads need
//                                               aligned rows. No tensor map of the operand; one
//                                               strided batch is read in place; default: none)
//   // tiletune: supports op_a op_b alpha_beta batch epilogue
//                                              (the parts of the BLAS contract the entry serves:
//                                               transposed A, transposed B, alpha, beta (C
//                                               read), strided batches, epilogues; alpha_beta is
//                                               alpha and beta; the entry then takes a
//                                               tt_gemm_args after ldc and any tensor map
//                                               (<tiletune/gemm_contract.h>). Without the line it
//                                               serves plain problems, C = A * B, only)
//   // tiletune: specializes op_a op_b alpha beta batch epilogue
//                                              (the supported parts compiled into each build
//                                               rather than read at run time: a problem's values
//                                               of them reach the source as TT_OP_A, TT_OP_B (0
//                                               or 1), TT_ALPHA (1: alpha != 1), TT_BETA (1: beta
//                                               != 0, C read), TT_BATCH (1: batch != 1) and
//                                               TT_EPILOGUE (TT_EPILOGUE_*);
//                                               each configuration is built once per combination
//                                               a problem asks for. The plain combination defines
//                                               none of them (<tiletune/gemm_contract.h> defaults
//                                               them to the plain problem's), so the build tuned
//                                               and recorded is the one without the line. 'shared'
//                                               may read them by those names, without TT_: a
//                                               build may lay its tiles out otherwise)
//
// Parameters reach the source as macros with the prefix TT_ (TILE becomes -DTT_TILE=16): a bare
// macro named T would break NVRTC's own headers. Expressions (expression.h) may use every
// parameter and the problem sizes M, N, K; requirements may also read the leading dimensions
// lda, ldb, ldc (a kernel that loads A as float4 needs `require lda % 4 == 0`), and grid and
// zero_output the GPU's multiprocessor count SM_COUNT (a kernel that sizes its last wave to the
// GPU, such as a stream-K schedule; the CPU backend draws it per fuzz case).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tuner/core/expression.h"
#include "tuner/core/gemm_shape.h"
#include "tuner/core/precision.h"

namespace tiletune {

inline constexpr const char* kParameterMacroPrefix = "TT_";
// The name by which grid and zero_output read the GPU's multiprocessor count.
inline constexpr const char* kSmCountName = "SM_COUNT";

// The multiprocessor count a launch gives SM_COUNT where it has no GPU's to give (the CPU
// backend) or perturbs the GPU's (the GPU fuzz, fuzz/perturbed_launch.h): 1 to 4, drawn from a
// seed (a fuzz case's schedule seed), so that a replayed case sees the same count. Small counts
// because the fuzz's shapes span a few tiles: waves of 1 to 4 (times a template's blocks per SM)
// are what make whole-tile waves, a partial wave and a grid smaller than one wave all occur.
int drawn_sm_count(std::uint64_t seed);

// A bad declaration, with "origin:line: " in front of the message.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A problem that a configuration's requirements exclude, checked before anything launches it:
// "tiled [TILE=16]: the problem 37x29x45 lda=45 ldb=29 ldc=29 does not meet requirement 'lda % 4 == 0'".
class RequirementNotMet : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

struct Parameter {
  std::string name;
  std::vector<std::int64_t> values;  // in declared order, no duplicates
};

// One point of a template's search space: a value for every parameter, in declared order.
struct Configuration {
  std::vector<std::pair<std::string, std::int64_t>> values;

  std::int64_t at(std::string_view name) const;  // throws std::out_of_range
  std::string to_string() const;                 // "TILE=16,PAD=1,SWIZZLE=0"
  friend bool operator==(const Configuration&, const Configuration&) = default;
};

// What one block computes (`tile`): rows x columns of C, walking its share of K in steps of depth
// (1 where the template does not say: no step to round K up to).
struct BlockTile {
  std::int64_t rows = 0, columns = 0, depth = 1;
};

// A declared tensor map, its box still expressions of the configuration.
struct TensorMapDeclaration {
  char operand = 'A';       // 'A' (K contiguous, M rows) or 'B' (N contiguous, K rows)
  bool tf32 = false;        // the copy rounds each element to TF32 (to nearest even)
  bool swizzle128 = false;  // rows of 128 bytes, 16-byte chunk c of row r at c ^ (r % 8)
  bool copy_unaligned = false;  // an operand TMA cannot read in place is copied first
  Expression inner, outer;  // the box's extent in elements: along the rows, and across them
  // `tensor_map A op_a=t` / `B op_b=t`: the map of the builds that store the operand transposed
  // (A K x M: M contiguous, K rows; B N x K: K contiguous, N rows), in place of the operand's
  // plain declaration, whose place among the entry's parameters it takes.
  bool transposed = false;
};

// An operand as a build stores it: A M x K and B K x N (rows of K and of N floats), or
// transposed (the build's op_a=t or op_b=t) A K x M and B N x K.
struct StoredOperand {
  char operand = 'A';
  bool transposed = false;

  // The stored matrix's row width and rows (elements) for the problem.
  std::int64_t width(const GemmShape& shape) const;
  std::int64_t rows(const GemmShape& shape) const;
  friend bool operator==(const StoredOperand&, const StoredOperand&) = default;
};

// `copy_unaligned B EXPR`: where EXPR holds for the build and shape, the launcher copies operand B
// into rows that start 16-byte aligned when its own do not (operand_staging.h), for a kernel that
// reads its rows in 16-byte vectors only where they are aligned.
struct UnalignedCopyDeclaration {
  char operand = 'A';
  Expression when;  // may read the parameters, M, N, K and the build's parts
};

// A tensor map of one launch: what the launcher encodes for the operand.
struct TensorMapBox {
  char operand = 'A';
  bool tf32 = false;
  bool swizzle128 = false;
  bool copy_unaligned = false;
  std::uint32_t inner = 0, outer = 0;
  // The operand is stored transposed (the build's op_a=t or op_b=t): the map is of the stored
  // matrix, A K x M (M wide, K rows, lda apart) or B N x K (K wide, N rows, ldb apart).
  bool transposed = false;

  // The stored matrix's row width and rows (elements) for the problem.
  std::int64_t width(const GemmShape& shape) const { return stored().width(shape); }
  std::int64_t rows(const GemmShape& shape) const { return stored().rows(shape); }
  StoredOperand stored() const { return {operand, transposed}; }
};

struct LaunchGeometry {
  std::array<std::uint32_t, 3> grid{1, 1, 1};
  std::array<std::uint32_t, 3> block{1, 1, 1};
  std::uint32_t dynamic_shared_bytes = 0;
  bool zero_output = false;  // C's M x N elements are set to 0 before the kernel runs
  // The configuration may add into C (KernelTemplate::may_add_into_c): its kernel computes alpha *
  // op(A) * op(B) alone, and the launcher applies beta and the epilogue in a pass over C after it
  // (epilogue_pass.h). Set by launch_geometry(config, shape, sm_count), which launches take.
  bool epilogue_pass = false;
  std::vector<TensorMapBox> tensor_maps;  // passed after the contract's parameters, in order
  // The operands of the copy_unaligned declarations that hold at this launch: copied into aligned
  // rows where theirs are not (as the tensor maps declared copy_unaligned are).
  std::vector<StoredOperand> aligned_copies;
  std::uint64_t threads_per_block() const {
    return std::uint64_t(block[0]) * block[1] * block[2];
  }
};

// The parts of the BLAS contract (gemm_shape.h) a template's entry serves.
struct ContractSupport {
  bool op_a = false, op_b = false, alpha = false, beta = false, batch = false, epilogue = false;
  // Whether the entry takes a tt_gemm_args: it declares any part.
  bool any() const { return op_a || op_b || alpha || beta || batch || epilogue; }
  std::string to_string() const;  // "op_a op_b alpha batch", or "none"
  friend bool operator==(const ContractSupport&, const ContractSupport&) = default;
};

// The values of a template's specialized parts (`specializes`) for one build: what TT_OP_A,
// TT_OP_B, TT_ALPHA, TT_BETA and TT_EPILOGUE say there. A part the template does not specialize
// stays at the plain problem's value.
struct Specialization {
  Op op_a = Op::n, op_b = Op::n;
  bool alpha = false;  // alpha != 1: the build scales by tt_gemm_args::alpha
  bool beta = false;   // beta != 0: the build reads C
  bool batch = false;  // batch != 1: the build offsets its pointers by its entry's strides
  Epilogue epilogue = Epilogue::none;

  bool plain() const { return *this == Specialization{}; }
  std::string to_string() const;  // "op_b=t beta batch epilogue=bias_relu", or "plain"
  // Reads to_string()'s text; throws std::invalid_argument naming a word it does not know.
  static Specialization parse(std::string_view text);
  friend bool operator==(const Specialization&, const Specialization&) = default;
};

struct KernelTemplate {
  std::string name;
  std::string entry;
  std::filesystem::path path;  // empty when parsed from a string
  std::string source;          // the whole file, compiled unchanged
  std::string source_hash;     // 16 hex digits of a 64-bit FNV-1a over the source bytes
  std::vector<Parameter> parameters;
  std::vector<Expression> requirements;
  // Tuning limits (`tune_if`): a configuration is tuned at a shape only where every one holds. Unlike
  // requirements they are no precondition: the fuzzer, replays and launches ignore them.
  std::vector<Expression> tuning_limits;
  std::array<Expression, 3> block;
  std::array<Expression, 3> grid;
  Expression dynamic_shared_bytes;
  Expression zero_output;
  std::vector<Expression> tile;  // `tile ROWS, COLUMNS[, DEPTH]`: 2 or 3, none where not declared
  Precision precision = Precision::fp32;
  std::string feature_arch;  // "sm_90a", or empty
  // The entry's parameters after the contract's: one per operand, the declarations without op_a=t
  // or op_b=t in order; a build that transposes the operand gets its op_a=t (op_b=t) one instead.
  std::vector<TensorMapDeclaration> tensor_maps;
  std::vector<UnalignedCopyDeclaration> unaligned_copies;  // at most one per operand
  // The entry's tensor map parameters.
  std::size_t tensor_map_parameters() const;
  ContractSupport supports;
  ContractSupport specializes;  // a subset of supports: compiled in, per problem

  // The problem's values of the specialized parts: the build that serves it.
  Specialization specialization(const GemmProblem& problem) const;
  // What the configuration's kernel is built as to serve `build`: the build itself, except where
  // the configuration may add into C (may_add_into_c): there without beta and the epilogue, which
  // the launcher's pass over C applies (LaunchGeometry::epilogue_pass).
  Specialization kernel_build(const Configuration& config, Specialization build) const;
  // The configuration as its kernel for that build compiles (kernel_build): its parameters, then
  // OP_A, OP_B, ALPHA, BETA, BATCH or EPILOGUE for each specialized value that is not the plain one
  // (so the plain build is the configuration itself). For compiling only: records name
  // configurations, never builds.
  Configuration build_configuration(const Configuration& config, const Specialization& build) const;
  // The configuration with the build's parts as they are (build_configuration without kernel_build).
  Configuration with_parts(const Configuration& config, const Specialization& build) const;
  // The build that serves the problem: build_configuration(config, specialization(problem)).
  Configuration build_configuration(const Configuration& config, const GemmProblem& problem) const {
    return build_configuration(config, specialization(problem));
  }
  // Every build the configuration has, the plain one first: every combination of the specialized
  // parts that meets the requirements reading the parts ("require OP_A == 0 || OP_B == 1": no
  // build of op_a=t alone). Where the configuration may add into C, the builds with beta or an
  // epilogue share their kernel with the build without them (kernel_build).
  std::vector<Specialization> builds(const Configuration& config) const;
  // The requirement of a build's parts (and no problem size) that the build (build_configuration's)
  // does not meet, or nullptr.
  const Expression* unmet_build_requirement(const Configuration& build) const;

  // Why this template cannot serve the problem's part of the BLAS contract, in one line
  // ("tiled serves no transposed A (op_a=t) (it supports op_b batch)"), or nothing.
  std::optional<std::string> unsupported(const GemmProblem& problem) const;
  // The same for one configuration: a build its requirements leave out.
  std::optional<std::string> unsupported(const GemmProblem& problem,
                                         const Configuration& config) const;
  // Whether the configuration's launch may clear C and add into it (split-K, stream-K's shares):
  // its zero_output is not 0 for the parameters alone (short-circuit evaluation, so that
  // "SPLIT_K > 1 || (STREAM_K > 0 && ...)" is 0 without a problem where both are off). Such a
  // kernel cannot read C for beta, nor apply an activation to a partial sum: it serves them
  // through the launcher's pass (kernel_build, LaunchGeometry::epilogue_pass).
  bool may_add_into_c(const Configuration& config) const;

  // What NVRTC compiles for on a GPU whose own target is `device_arch` ("sm_90"): the template's
  // architecture-specific target where it declares one; empty where that target is another GPU
  // family's (the template cannot run there).
  std::string compile_arch(const std::string& device_arch) const;
  // Whether it can run on such a GPU (compile_arch is not empty).
  bool runs_on(const std::string& device_arch) const { return !compile_arch(device_arch).empty(); }

  // The -D options for one configuration: {"-DTT_TILE=16", "-DTT_PAD=1", ...}.
  std::vector<std::string> macro_definitions(const Configuration& config) const;

  // Parameters bound to the configuration, plus M, N, K when a shape is given (and lda, ldb, ldc
  // when a problem is).
  Bindings bindings(const Configuration& config, const GemmShape* shape = nullptr) const;
  Bindings bindings(const Configuration& config, const GemmProblem& problem) const;

  // Whether every requirement holds. Requirements that read M, N, K, lda, ldb or ldc are only
  // checked when a problem is given (so that compiling needs none); a shape stands for its
  // packed problem (lda = K, ldb = ldc = N), as the tuner verifies and times it.
  bool satisfies_requirements(const Configuration& config, const GemmShape* shape = nullptr) const;
  bool satisfies_requirements(const Configuration& config, const GemmProblem& problem) const;
  // The first requirement that does not hold for the problem (one that cannot be evaluated, e.g.
  // a division by zero, does not hold), or nullptr.
  const Expression* violated_requirement(const Configuration& config,
                                         const GemmProblem* problem = nullptr) const;
  // Whether some requirement reads M, N, K, lda, ldb or ldc (else a valid configuration meets
  // every problem's).
  bool requirements_read_problem() const;
  // Whether every tuning limit holds at the shape (one that cannot be evaluated does not).
  bool worth_tuning(const Configuration& config, const GemmShape& shape) const;
  // The same two on bindings the caller made (bindings(config, problem)) and keeps: a plan weighs
  // hundreds of configurations at one problem, rebinding only the parameters (rebind) each time.
  const Expression* violated_requirement(const Bindings& values, const Configuration& config,
                                         const GemmProblem& problem) const;
  bool worth_tuning(const Bindings& values) const;
  static void rebind(Bindings& values, const Configuration& config);
  // Throws RequirementNotMet naming the first requirement the problem does not meet.
  void check_requirements(const Configuration& config, const GemmProblem& problem) const;

  // Evaluates block, grid, shared memory, zero_output, the tensor maps' boxes and copy_unaligned; throws
  // TemplateError when a value is < 0 (or < 1 for a dimension) or does not fit in 32 bits, or
  // when a box is one TMA cannot copy (an extent outside 1 to 256, rows not a multiple of 16
  // bytes, a swizzled row other than 128 bytes).
  // `sm_count` is the GPU's multiprocessor count, bound to SM_COUNT; 0 where the caller has no
  // GPU to ask, which a template that reads SM_COUNT refuses (TemplateError).
  LaunchGeometry launch_geometry(const Configuration& config, const GemmShape& shape,
                                 int sm_count = 0) const;
  // The same on bindings the caller keeps (bindings(config, &shape) with SM_COUNT where read): a
  // plan predicts hundreds of launches at one shape.
  LaunchGeometry launch_geometry(const Bindings& values, const Configuration& config,
                                 const GemmShape& shape) const;
  // Whether grid or zero_output reads SM_COUNT.
  bool reads_sm_count() const;
  // The declared tile for the configuration; none where the template declares none. Throws
  // TemplateError where an extent is below 1.
  std::optional<BlockTile> block_tile(const Configuration& config) const;

  // Parses "TILE=16,PAD=1,SWIZZLE=0" (every parameter once, in any order, each value one of the
  // declared candidates); throws TemplateError naming what is wrong.
  Configuration parse_configuration(std::string_view text) const;
};

// Reads and parses a template file; throws TemplateError ("path:line: why") on a bad declaration
// and std::runtime_error when the file cannot be read.
KernelTemplate load_template(const std::filesystem::path& path);
// Parses a template's text, with tiletune's device library put in where it is included
// (device_library.h); a recorded text, already expanded, comes back as it was.
KernelTemplate parse_template(std::string source, const std::string& origin);

std::string fnv1a_hex(std::string_view bytes);

// [A-Za-z_][A-Za-z0-9_]*: what template and parameter names are. A name read from a database or a
// bundle is checked again, since it becomes part of file paths and generated C++.
bool is_identifier(std::string_view s);

}  // namespace tiletune
