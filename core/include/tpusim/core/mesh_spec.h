#pragma once
// The device mesh and sharding rules of a workload (issue 9), as written in the scenario:
//
//   workload:
//     mesh: {data: 16, fsdp: 4, tensor: 4}    # ordered named axes; product = the slice's chips (x slices)
//     mesh_mapping: {tensor: [z], data: [x, y]} # optional: the torus axes each mesh axis takes (else the rule
//                                               # of kernels/mesh.h)
//     sharding: {batch: [data, fsdp], mlp: [tensor]}  # optional: logical tensor axis -> mesh axes, overriding
//                                                     # the defaults (kernels/sharding.h)
//
// Parsed here with every value located; the product and the names are checked by check_mesh (against the pod),
// the mapping onto the torus by kernels::build_mesh. No mesh: every chip of the pod on one `data` axis.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tpusim/core/config_tree.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/core/pod_spec.h"

namespace tpusim {

struct MeshAxisSpec {
  std::string name;
  int size = 1;
  SourceLoc loc;
};

// An explicit placement: the torus axes (0 = x, 1 = y, 2 = z) a mesh axis takes, in order. Axes sharing a
// torus axis split it in the order the mapping lists them (the first takes contiguous chips).
struct MeshMappingSpec {
  std::string axis;
  std::vector<int> torus_axes;
  SourceLoc loc;
};

struct ShardingRuleSpec {
  std::string logical;                 // batch, length, embed, heads, kv_heads, mlp, vocab, expert, layers,
                                       // norm_length, activation_embed
  std::vector<std::string> mesh_axes;  // empty: replicated
  SourceLoc loc;
};

enum class PipelineSchedule { gpipe, one_f_one_b };

struct MeshSpec {
  std::vector<MeshAxisSpec> axes;         // empty: no mesh given
  std::vector<MeshMappingSpec> mapping;   // empty: the default rule
  std::vector<ShardingRuleSpec> rules;    // overrides of the default rules
  SourceLoc loc;                          // of workload.mesh (or of the workload when absent)
  [[nodiscard]] bool given() const { return !axes.empty(); }
};

// A logical tensor axis sharding rules name (MaxText's logical axis names, shortened): what it splits and the
// mesh axes it goes over unless workload.sharding says otherwise, the parallelism kinds that shard it in the
// catalogue's order (below). The one table the parser, the lowering's default rules (kernels/sharding.cpp) and
// `tpusim describe params` read.
struct LogicalAxisInfo {
  std::string name;
  std::vector<std::string> default_mesh_axes;
  std::string doc;
};
[[nodiscard]] const std::vector<LogicalAxisInfo>& logical_axes();
// A mesh axis name with a built-in meaning (others may be named; they shard what rules map to them): the one
// catalogue of parallelism kinds. A kind owns what it shards (the logical axes its default rules put it on:
// the lowering derives its collectives from them, and the checks of kernels/sharding.cpp its validation), where
// it goes on the torus and whether the layout search tries it.
struct MeshAxisInfo {
  std::string name;
  std::string doc;
  std::vector<std::string> shards;  // logical axes (logical_axes()) whose default rules name this kind
  // Placement on the torus (kernels/mesh.h): axes not mapped explicitly are laid out by ascending rank, the
  // heaviest traffic first, on the shortest hops; an axis named outside the catalogue ranks after all.
  int placement = 0;
  // The axis the slices of a multislice pod go to when its size is a multiple of the slices (else the
  // outermost such axis).
  bool takes_slices = false;
  // The layout search (`tpusim layouts`): the workloads it searches the axis for, the axis's place in a
  // searched mesh's factors, the axis whose meshes it is tried on instead as a factor of its own (tensor_sequence
  // on each tensor mesh), and whether a searched mesh names it only at a size above 1.
  enum class Searched : std::uint8_t { never, always, transformer, moe, whole_sequences };
  Searched searched = Searched::never;
  int search_order = 0;
  std::string variant_of{};
  bool named_above_one = false;
  // A rule another framework writes for the axis that clashes with the defaults here: the logical axis it is
  // written for, and what the clash's error suggests instead of keeping the axis in one rule.
  std::string foreign_rule{};
  std::string foreign_rule_hint{};
};
[[nodiscard]] const std::vector<MeshAxisInfo>& known_mesh_axes();
// The catalogue entry of mesh axis `name`, or nullptr for a name outside it.
[[nodiscard]] const MeshAxisInfo* find_mesh_axis(std::string_view name);
// Adds a parallelism kind after the built-in ones (core/src/mesh_spec.cpp lists those): a study's or a test's
// own kind is this one call. Throws std::invalid_argument for an empty name, a name the catalogue has, or a
// logical axis outside logical_axes(). remove_mesh_axis takes an added kind out again (false: no added kind of
// that name). Neither is thread-safe: call them before any lowering starts.
void add_mesh_axis(MeshAxisInfo kind);
bool remove_mesh_axis(std::string_view name);
// The one axis of a workload without a mesh (every chip a replica).
inline constexpr const char* kDefaultMeshAxis = "data";

// The names of the two tables above, in their order.
[[nodiscard]] const std::vector<std::string>& logical_axis_names();
[[nodiscard]] const std::vector<std::string>& known_mesh_axis_names();

// Reads workload.mesh, workload.mesh_mapping and workload.sharding from the workload map (absent keys leave
// `out` empty). Every problem goes into diags.
void parse_mesh(const ConfigNode& workload, MeshSpec& out, Diagnostics& diags);

// Cross-checks against the pod: the product of the axis sizes equals the chips of the pod (all slices), every
// mapped and ruled mesh axis exists, at most one rule per logical axis.
void check_mesh(const MeshSpec& mesh, const PodSpec& pod, Diagnostics& diags);

}  // namespace tpusim

namespace tpusim {
// The mesh as rendered in reports: "data 8, tensor 4" (empty when none was given), the mapping and the rules
// likewise ("tensor: z; data: x y", "batch: data fsdp").
[[nodiscard]] std::vector<std::pair<std::string, std::string>> render_mesh(const MeshSpec& mesh);
}  // namespace tpusim
