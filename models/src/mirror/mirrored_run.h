#pragma once
// When a step runs with mirrored chips, and the child process it runs in (models/README.md "Mirrored chips").
//
// A SystemC kernel runs once per process, and a mirrored run learns only as it goes (or at its end) whether
// every mirror received what its representative did. So simulate() forks first: the child runs the mirrored
// step; if it verifies, the child tells the parent so and carries on as the program (it writes the outputs
// and exits; the parent exits with its status, having written nothing); if not, the child tells the parent
// why and exits without writing anything, and the parent simulates every chip.
#include <optional>
#include <string>

#include "mirror/translation_classes.h"
#include "net/interconnect.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/simulate.h"

namespace tpusim::models {

// The classes to mirror, or nullopt with `why_not` set: mirroring switched off (options.mirror), no ICI, a
// fault, degraded link, degraded or stopping chip in the step, chunked links (whose same-tick order of chunks
// is the process order), routing other than dimension order, or no class with two chips.
[[nodiscard]] std::optional<TranslationClasses> mirror_classes(const Scenario& scenario,
                                                               const ir::ProgramSet& programs,
                                                               const SimOptions& options,
                                                               const net::InterconnectOptions& network,
                                                               std::string& why_not);

class MirrorChild {
 public:
  // Forks. Returns in the child (child() true), and in the parent only when the child fell back (child()
  // false, fallback() the reason); when the child verified, the parent exits with the child's status.
  MirrorChild();
  [[nodiscard]] bool child() const { return fd_ >= 0; }
  [[nodiscard]] const std::string& fallback() const { return fallback_; }
  // In the child: the mirrored run verified; the child goes on as the program.
  void verified();
  // In the child: it did not; the parent simulates every chip.
  [[noreturn]] void fall_back(const std::string& why);

 private:
  int fd_ = -1;
  std::string fallback_;
};

}  // namespace tpusim::models
