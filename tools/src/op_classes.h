#pragma once
// The per-op-class time breakdown of a run (docs/summary-format.md, "op_classes"), aggregated from the
// simulation's trace callback (one call per completed instruction), so the models need no part of it.
//
// What a class's time means: on each recorded chip, the step [0, the chip's finish] is cut at every
// instruction start and end; each interval is given to the instructions in flight on the first tier present
// (the unit kinds' time_rank, ir::kUnitKindInfo: 1 MXU, VPU and SparseCore, 2 ICI, 3 DMA, 4 host; barriers
// are ignored), split equally between them, and each
// instruction's share goes to its op class (ir::OpClass). So the classes add up to the time the chip had
// anything in flight, and a DMA or a collective counts only where no compute hides it, as in the breakdown.
// The chips recorded are the first chip of each program (role); their times are averaged weighted by the
// number of chips running each role.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::tools {

struct OpClassTime {
  std::string name;        // ir::op_class_name
  double time_s = 0;       // attributed time, mean over chips (see above)
  double busy_s = 0;       // sum of the class's instruction durations (overlapping), mean over chips
  std::uint64_t instructions = 0;  // per recorded chip, summed over roles weighted like the times
};

// One op of the step: the instructions of one label with its layer (stage, block...) index dropped, so
// "layer0.fwd.qkv" ... "layer23.fwd.qkv" are the op "layer*.fwd.qkv" (a profiler's "top ops by time").
struct OpTime {
  std::string name;
  std::string unit;                // the unit it runs on: mxu, vpu, sparsecore, ici, dma, host
  double instructions = 0;         // per chip (weighted over roles like the times)
  double time_s = 0;               // attributed as the op classes' times are (they add up the same way)
  double active_s = 0;             // the union of its instructions' spans on the chip: when any of them ran
  double flops = 0;                // hardware FLOPs per chip
  double hbm_bytes = 0;            // HBM bytes its instructions read and write on the chip (hbm_bytes_of)
  double moved_bytes = 0;          // bytes a DMA or a collective moves, per chip
  // A host op's kind as the lowering declares it (ir::HostWork::op): the run's notes sort host time by it. An op
  // is one label, so its host instructions share a kind in every lowering; in a program file that gives one
  // label to several kinds, the first instruction recorded names it.
  std::optional<ir::HostOp> host_op;
};
// The HBM bytes instruction `ins` reads and writes on its own chip, as the simulator counts them in
// bytes.hbm_read / hbm_written: a fused op's streams; a DMA's bytes once per end in HBM (whichever end times
// it; a remote put's source, its write being the destination chip's); a host transfer's (an infeed writes HBM,
// an outfeed or checkpoint reads it); a send's read and a recv's write; a gather's rows and a scatter's rows
// read and written back, and their pooled vectors, where they are in HBM (models/src/sparsecore/sparsecore.cpp).
// Not a collective's: its steps' HBM traffic depends on the plan the network runs, so it is not attributed.
[[nodiscard]] double hbm_bytes_of(const ir::Instruction& ins);
// An op's name from an instruction label (see OpTime).
[[nodiscard]] std::string op_of_label(const std::string& label);

class OpClassRecorder {
 public:
  explicit OpClassRecorder(const ir::ProgramSet& programs, std::uint32_t chips);
  void record(const models::TraceSpan& span);
  // Classes with any instruction, in ir::OpClass order, and the time nothing was in flight up to step_time.
  // `exposed_collectives` (may be null) receives the same attribution of the collectives' exposed time (ICI
  // the highest tier in flight) by collective kind ("all_reduce", ...; kinds that ran only).
  // `ops` (may be null) receives every op of the step, longest attributed time first (ties by name).
  [[nodiscard]] std::vector<OpClassTime> finish(double step_time, double* idle_s,
                                                std::vector<std::pair<std::string, double>>* exposed_collectives =
                                                    nullptr,
                                                std::vector<OpTime>* ops = nullptr) const;

 private:
  struct Span {
    double start, end;
    std::uint8_t tier;
    std::uint8_t op_class;
    std::uint8_t collective;  // CollectiveKind of a collective, else kNoCollective
    std::uint32_t op;         // index into ops_[role]
  };
  static constexpr std::uint8_t kNoCollective = 0xff;
  const ir::ProgramSet& programs_;
  std::vector<std::int64_t> role_chip_;     // per program: the chip recorded (-1: none runs it)
  std::vector<double> role_weight_;         // per program: chips running it / all chips
  std::vector<std::vector<Span>> spans_;    // per program
  // Per program: each label's op (index into ops_), and the ops with their per-chip totals (times unset).
  std::vector<std::vector<std::uint32_t>> op_of_label_;
  std::vector<std::vector<OpTime>> ops_;
};

}  // namespace tpusim::tools
