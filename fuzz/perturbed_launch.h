// The GPU fuzz's perturbed launches. A race between the warps of a block (a stage overwritten
// while slower warps still read it: a barrier missing or misplaced) shows on the GPU only when
// those warps drift apart, which at a fuzz case's size its scheduler seldom lets them do by enough;
// the CPU backend varies its fibers' order instead. So the cases with an odd schedule seed run a
// second build of the configuration, the skewed build, in which every __syncthreads() is followed
// by a sleep of 2 to 8 us in about half of each block's warps (which half: a hash of the block,
// the grid and the warp), and give SM_COUNT a drawn count (drawn_sm_count: 1 to 4), so that
// a schedule over waves (stream-K) splits its work into many parts at the fuzz's sizes. A sleep
// never breaks a correct kernel: it only lets a wrong one show.
#pragma once

#include <optional>

#include "fuzz/gemm_case.h"
#include "tuner/core/kernel_template.h"

namespace tiletune {

// Whether the case runs perturbed: an odd schedule seed, so that a replayed case runs as it did.
bool is_perturbed(const GemmCase& gemm_case);

// The template's skewed build: its source after a prelude that makes __syncthreads() sleep as
// above, with its own source hash (so that compile caches keep the two apart). Nothing when the
// source never calls __syncthreads().
std::optional<KernelTemplate> skewed_build(const KernelTemplate& tmpl);

}  // namespace tiletune
