#pragma once
// When a step runs with mirrored chips (models/README.md "Mirrored chips"). A mirrored run that does not verify
// makes simulate() throw MirrorFallback; running the step again with every chip, in a fresh process, is the
// caller's (the tool's: tools/src/mirrored_step.h).
#include <optional>
#include <string>

#include "mirror/translation_classes.h"
#include "net/interconnect.h"
#include "tpusim/core/scenario.h"
#include "tpusim/kernels/program.h"
#include "tpusim/models/sim_options.h"

namespace tpusim::models {

// The classes to mirror (options.mirror_partition, or the translation classes with every chip a fault stops
// or degrades in a class of its own), or nullopt with `why_not` set: mirroring switched off (options.mirror),
// no ICI, chunked links (whose same-tick order of chunks is the process order), or no class with two chips.
[[nodiscard]] std::optional<TranslationClasses> mirror_classes(const Scenario& scenario,
                                                               const ir::ProgramSet& programs,
                                                               const SimOptions& options,
                                                               const net::InterconnectOptions& network,
                                                               std::string& why_not);

}  // namespace tpusim::models
