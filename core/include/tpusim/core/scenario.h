#pragma once
// A scenario: pod + workload + options, fully resolved. load_scenario() composes the scenario YAML with the
// bundled pod, chip and model it names, merges inline overrides, applies `--set` overrides, and validates the
// whole tree at once. Nothing downstream sees YAML.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tpusim/core/chip_spec.h"
#include "tpusim/core/config_tree.h"
#include "tpusim/core/pod_spec.h"

namespace tpusim {

enum class DType { bf16, f32, int8, fp8 };
[[nodiscard]] int dtype_bytes(DType t);
[[nodiscard]] std::string_view dtype_name(DType t);

enum class ModelKind { gemm, mlp, collective, dlrm };
enum class Activation { relu, gelu };

struct GemmModel {
  std::int64_t m = 0, k = 0, n = 0;  // C[m,n] = A[m,k] x B[k,n]
};

// A stack of dense layers: widths[0] inputs, then one layer per following width.
struct MlpModel {
  std::vector<int> widths;
  Activation activation = Activation::gelu;
};

enum class CollectiveKind : std::uint8_t { all_reduce, reduce_scatter, all_gather, all_to_all, permute };
[[nodiscard]] std::string_view collective_name(CollectiveKind k);

// One collective over the pod, for interconnect studies: `bytes` per chip (the input buffer of each chip),
// over the listed torus axes (empty = every axis), with a named algorithm ("auto" picks the default).
struct CollectiveModel {
  CollectiveKind op = CollectiveKind::all_reduce;
  Bytes bytes;
  std::vector<int> axes;
  std::string algorithm = "auto";
};

// A DLRM-style recommender (Naumov et al. 2019, arXiv:1906.00091): dense features through a bottom MLP,
// categorical features looked up in embedding tables and sum-pooled, the pairwise dot products of the bottom
// MLP's output and the pooled embeddings, and a top MLP over those and the bottom output. Lowered by
// kernels/src/dlrm.cpp: lookups on the SparseCores when the chip has them, on the TensorCores otherwise.
struct DlrmModel {
  int dense_features = 0;           // inputs of the bottom MLP
  std::vector<int> bottom_mlp;      // output widths of its layers; the last is embedding_dim
  std::vector<int> top_mlp;         // output widths of the top MLP's layers; the last is the prediction
  int tables = 0;                   // embedding tables, one per categorical feature
  std::int64_t rows_per_table = 0;  // rows of each table
  int embedding_dim = 0;            // values per row
  int lookups_per_table = 1;        // rows pooled per table and example (the pooling factor)
};

struct ModelSpec {
  std::string name;
  ModelKind kind = ModelKind::mlp;
  GemmModel gemm;
  MlpModel mlp;
  CollectiveModel collective;
  DlrmModel dlrm;
  std::map<std::string, FieldOrigin> origins;
};

enum class StepKind { forward, train };
enum class Optimizer { sgd, adam };

// The host's input pipeline (tf.data / grain on the host CPU) feeding each step's batch to the chips. The
// lowering turns it into a host infeed (see lower_workload in kernels/lowering.h).
struct InputSpec {
  double examples_per_s_per_host = 0;  // examples the pipeline produces per second per host; 0 = no limit
  Bytes bytes_per_example;             // host -> chip bytes per example; 0 (and no rate) = no infeed
  int prefetch = 2;                    // steps of input buffered ahead; 0 = the step waits for its input
};

struct CheckpointSpec {
  int every_steps = 0;  // write the parameters and optimizer state every N steps (amortised); 0 = never
};

struct WorkloadSpec {
  ModelSpec model;
  // A program file (the format `tpusim lower` writes, kernels/README.md) run instead of a lowered model: the
  // path as resolved against the scenario's folder; empty when the workload is a model.
  std::string program;
  std::int64_t batch = 0;  // examples per step (MLP); ignored by a raw GEMM
  StepKind step = StepKind::train;
  DType dtype = DType::bf16;
  Optimizer optimizer = Optimizer::adam;
  InputSpec input;
  Seconds step_launch_overhead;  // host time to launch the step's program, before anything runs
  int host_syncs = 0;            // host round trips at the end of the step (e.g. fetching the loss)
  CheckpointSpec checkpoint;
};

enum class MxuFidelity { fast, cycle };
// ICI link model: chunked store-and-forward transfers with per-link FIFO contention, or flow level with
// max-min fair bandwidth sharing (faster; no per-chunk events).
enum class LinkFidelity { chunked, flow };
// ICI routing policy (topology/routing.h): dimension-order routes, or fault-aware routes that keep DOR where
// it avoids every failed link and chip and take a shortest surviving path elsewhere.
enum class RoutingPolicy { dor, fault_aware };

struct FidelitySpec {
  MxuFidelity mxu = MxuFidelity::fast;
  LinkFidelity links = LinkFidelity::chunked;
  Bytes link_chunk = MiB(1);  // chunk size of the chunked link model
  RoutingPolicy routing = RoutingPolicy::dor;
};

struct Scenario {
  std::string name;
  std::string description;
  std::int64_t seed = 1;
  PodSpec pod;
  ChipSpec chip;
  WorkloadSpec workload;
  FidelitySpec fidelity;
  // The composed tree after merges and overrides (for the record); the typed fields above are the truth.
  ConfigNode tree;
  std::map<std::string, FieldOrigin> origins;  // top-level scenario fields
};

// Resolves a scenario given as a bundled name (scenarios/NAME.yaml) or a path. Throws ConfigError with
// every problem found.
[[nodiscard]] Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides);

// The resolved scenario as a flat, ordered list of (dotted key, value with units) for reports.
[[nodiscard]] std::vector<std::pair<std::string, std::string>> render_scenario(const Scenario& s);

// Loads a bundled or user chip / pod / model by name or path (used by `tpusim describe`).
[[nodiscard]] ChipSpec load_chip(const std::string& name_or_path);
[[nodiscard]] PodSpec load_pod(const std::string& name_or_path);

}  // namespace tpusim

namespace tpusim {
// Every declared field of every spec, grouped by section ("chip", "pod", "workload", ...), for
// `tpusim describe params` and the generated docs.
[[nodiscard]] std::vector<std::pair<std::string, std::vector<FieldInfo>>> all_field_tables();
}  // namespace tpusim
