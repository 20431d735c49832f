#include "tpusim/models/assumptions.h"

#include <fmt/format.h>

#include "host/host.h"
#include "mxu/mxu.h"
#include "net/interconnect.h"
#include "tpusim/core/pod_spec.h"
#include "tpusim/models/timing.h"

namespace tpusim::models {
namespace {

// The pod field table's default of `key`, so that the listing cannot drift from it.
std::string pod_default(const std::string& key) {
  for (const FieldInfo& f : pod_fields().infos()) {
    if (f.key == key && f.default_text) return *f.default_text;
  }
  return "?";
}

}  // namespace

std::vector<Assumption> model_assumptions() {
  return {
      {"MXU weight load", "1 row per cycle (R cycles per R x C weight tile)", "models/src/mxu/dataflow_weight_stationary.cpp",
       "the weight-load path of the MXU is not published; it bounds skinny GEMMs (e.g. v2's two MXUs load "
       "weights at about half its HBM rate)"},
      {"MXU accumulator width", fmt::format("{} B per partial sum", kMxuAccumulatorBytes),
       "models/include/tpusim/models/timing.h", "f32 (int32 for int8) accumulation, as XLA does on TPU"},
      {"matmuls in flight per TensorCore", fmt::format("{}", kMxuInstructionsInFlight), "models/src/mxu/mxu.h",
       "sequencer instruction buffer depth, not published; enough to stream back-to-back matmuls"},
      {"HBM stripe", format_bytes(Bytes(kHbmStripe)), "models/include/tpusim/models/timing.h",
       "address-interleaving granule across HBM channels (HBM2 32 B bursts x 8), not published for TPU"},
      {"PCIe DMA latency", format_time(kPcieLatency), "models/include/tpusim/models/timing.h",
       "typical PCIe Gen3 host DMA round trip, not published for TPU hosts"},
      {"on-chip copy latency", format_time(kOnChipCopyLatency), "models/include/tpusim/models/timing.h",
       "VMEM/CMEM copies cost tens of cycles, below what matters next to HBM latency"},
      {"DMA's faster end keeps up",
       "the slower memory (lower nominal bandwidth) times a DMA; the faster one counts its bytes, serves none",
       "models/src/dma/dma.cpp",
       "HBM read and written bytes, HBM utilization and PCIe bytes count every DMA that touches the memory, but "
       "the bandwidth a transfer takes from its faster end is not modelled (no contention there, not in its "
       "busy time). On the bundled chips that end is HBM only for host <-> HBM over PCIe (16-32 GB/s against "
       "700-2765 GB/s; the host's own infeed and checkpoint transfers likewise); a what-if HBM faster than VMEM "
       "or CMEM makes it HBM for their loads too, whose rates may then add up to more than HBM's (the run notes "
       "\"HBM over its rate\" when they did). Modelling it needs a transfer served by both ends at once"},
      {"host instructions in flight per chip", fmt::format("{}", kHostTransfersInFlight), "models/src/host/host.h",
       "the host serves a chip's host work in program order; prefetch is expressed by the lowering"},
      {"fused op: exposed first load and last store", "hbm.latency + 1/grid_steps of its reads; 1/grid_steps of "
       "its writes, at the full HBM rate", "models/src/memory/fused_stream.h",
       "a fused kernel's first operand tiles arrive before its units start and its last results leave after "
       "them; the rest of its stream overlaps its compute (one fused op per TensorCore unit at a time)"},
      {"fused matmul: pipeline bound", "every `buffers` grid steps last at least the MXU's drain + hbm.latency + one "
       "step's loads of every TensorCore + one step's matmul", "models/src/memory/fused_stream.h",
       "the bound the GEMM tiler ranks tilings by (kernels/src/tiling/gemm.cpp), so the tiling it picks is charged "
       "what it assumed: a step's loads are issued when the matmul `buffers` steps before has drained; every "
       "TensorCore loads its own step's tiles at once. Programs that name no buffers have no bound"},
      {"ICI operations in flight per chip", fmt::format("{}", net::kIciOperationsInFlight), "models/src/net/ici_unit.h",
       "collectives, sends and recvs a chip's ICI unit runs at once, started in order; not published, enough for "
       "a layer's overlapped all-gather, reduce-scatter, pipeline transfers and gradient buckets"},
      {"a late recv's HBM write", "at the recv's start", "models/src/net/point_to_point.h",
       "a send's bytes are written into the receiver's HBM once its recv has started (at once when it already "
       "had): a recv posted after its eager send was delivered pays the write then, as a rendezvous would land "
       "the bytes; the sender's read is charged when the send starts. A put's write into its destination's HBM is "
       "counted there when delivered (hbm_written) but takes none of its bandwidth (nothing runs there to time "
       "it)"},
      {"DCN latency", format_time(net::kDcnLatency), "models/src/net/transport.h",
       "one way between hosts of different pods (NIC, a few switch hops, host stack); not published"},
      {"DCN fabric oversubscription", pod_default("dcn_oversubscription") + " (default of pod.dcn_oversubscription)",
       "models/src/net/transport.cpp",
       "each slice's hosts reach the data-center fabric through one uplink carrying their NICs' bandwidth / the "
       "ratio; 1 is a non-blocking fabric (the uplink never binds; Google's Jupiter fabrics are Clos networks "
       "of over 1 Pb/s bisection, Singh et al. 2015, but a TPU slice's share is not published). Above 1, a DCN "
       "stage whose every chip sends off its slice gets NIC share / ratio per chip (docs/calibration.md)"},
      {"per-host step jitter", pod_default("host_jitter") + " (default of pod.host_jitter)",
       "models/src/host/step_jitter.h",
       "each host's step is late by a normal draw of standard deviation pod.host_jitter x the step time, drawn "
       "afresh every step, and a step whose chips communicate across hosts ends when its slowest host does: "
       "it pays cv x step x E[max - mean of H normals] (about sqrt(2 ln H)), estimated from 256 seeded draws "
       "per host, as idle time on every chip; 0 for one host. The distribution is an assumption "
       "(docs/calibration.md)"},
      // Calibrated on the calibration set (calibration/measurements.yaml, C1-C3); `tpusim calibrate` checks them.
      {"ICI link efficiency", fmt::format("{} (default of chip.ici.link_efficiency)", kIciLinkEfficiency),
       "core/include/tpusim/core/chip_spec.h",
       "achievable fraction of a link's one-way rate after framing and flow control; C1's plateau (8x16 v5e "
       "all-gather, 256 MiB-4 GiB) moves 42.2 GB/s per link, 94% of the scaling book's 45 GB/s; C3 (v2) ~96% of "
       "62 GB/s; one value for every generation, no source says otherwise"},
      {"MXU step overhead", fmt::format("{} (default of chip.mxu.step_overhead)",
                                        format_time(Seconds(kMxuStepOverheadSeconds))),
       "core/include/tpusim/core/chip_spec.h",
       "the arrays idle between back-to-back matmul instructions (pipeline steps) while the scalar unit waits "
       "on DMA semaphores and issues the next ones; the JAX Pallas TPU docs give ~0.35 us per grid step [U]. "
       "A fixed time costs more on fast MXUs: v2 (C3) runs at 99.9% of peak over a long run (the model 99.2%), "
       "v6e (C2) at 90% "
       "(the model 96.7%); no per-tile bubble beyond the dataflow's schedule, C3 leaves no room for one"},
      {"HBM efficiency", fmt::format("{} (default of chip.hbm.efficiency)", kHbmEfficiency),
       "core/include/tpusim/core/chip_spec.h",
       "long single-direction streams lose ~10% to refresh (HBM2 tRFC ~350 ns per 3.9 us) and row activations, "
       "as GPUs' HBM read streams do; no read-only TPU measurement in the calibration set"},
      {"HBM read/write turnaround", fmt::format("{} (default of chip.hbm.turnaround)", kHbmTurnaround),
       "core/include/tpusim/core/chip_spec.h",
       "loss while reads and writes interleave (a copy); C2's v6e copy runs at 83.0% of peak, 0.90 x (1 - 0.07) "
       "with its read latency; only the product is measured"},
      {"collective start-up", format_time(net::kCollectiveStartup), "models/src/net/collective_engine.h",
       "before a collective's first byte leaves: the sequencer issues it and the DMA engines fetch its first "
       "descriptors (a few hundred cycles); C1's latency floor (15 ring steps in ~15-16 us with the 1 us hop "
       "latency) leaves under 1 us for start-up and step synchronisation together"},
      {"collective step synchronisation", format_time(net::kCollectiveStepSync), "models/src/net/collective_engine.h",
       "per step, after its data has arrived: the waiting core sees the arrival semaphore (it travels behind the "
       "data, no extra hop) and issues the next step's DMA, ~10-20 cycles; bounded by C1's floor as above"},
      {"collective HBM traffic", "sends read, receives write, a reduction reads its local operand",
       "models/src/net/collective_engine.h",
       "the ICI DMAs read a step's send buffers from HBM and write what arrives into HBM; a reduction reads its "
       "local operand and writes the sum in place of the received shard (no separate write of the shard); the "
       "bytes share the chip's HBM scheduler, one engine per ICI slot, reading and writing at once (they pay "
       "hbm.turnaround as a copy does) without hbm.latency (the DMA pipelines it); a step ends no sooner than its "
       "HBM has moved them, taken 1 ps later by the network's process; no new constant"},
      {"aggregate ring collectives", "fidelity.collectives: aggregate (default)", "models/src/net/collective_engine.h",
       "a ring collective's steps are synchronous across its group (a step ends when its slowest send arrives), "
       "so a run of identical steps moves at the group's bottleneck link rate: one weighted max-min fair flow per "
       "group and run, plus the steps' hop latencies, reductions (one VPU reservation at the end) and "
       "synchronisations; measured against per_step: sharded training steps within 0.2%, contended rings within 1%, "
       "sooner when a long vector op holds the VPU (models/src/net/README.md)"},
      // The job timeline's defaults (core/src/fault_plan.cpp, docs/faults.md): no TPU source gives them.
      {"job heartbeat and timeout", "5 s and 30 s (defaults of job.heartbeat, job.timeout)",
       "core/src/fault_plan.cpp",
       "watchdogs of distributed training runtimes check liveness every few seconds and declare a worker dead after "
       "several missed beats; the TPU runtime's values are not published"},
      {"job restart and repair", "10 min and 1 h (defaults of job.restart, job.repair)", "core/src/fault_plan.cpp",
       "a relaunch reschedules the slice, recompiles (or loads the compilation cache) and initialises; a repair "
       "swaps a tray or moves the job to healthy capacity; neither is published for TPU"},
      {"checkpoint storage bandwidth", "1 GB/s per host (default of chip.host.storage_bandwidth)",
       "core/src/chip_blocks.cpp",
       "one VM's share of a distributed file system, for writes and for the restore's reads alike; the job's "
       "checkpoint cost is the state of a host's writing chips over it (each distinct shard written once, by "
       "the data replica at coordinate 0, JAX's replica_id 0)"},
      // The vector unit's throughput per generation (configs/chips/*.yaml, docs/hardware.md).
      {"VPU ALUs per lane-sublane", "v4 2, v5e 4, v6e 4 (chip.vpu.alus)", "configs/chips/v4.yaml, v5e.yaml, v6e.yaml",
       "published for v2 and v3 (2, Norrie et al.) and v5p (4, the scaling book) only. v4 and v6e count the "
       "vector-ALU issue slots of one instruction bundle in a third-party disassembler of their machine code "
       "(tpuasm: v4 va0-va1, v6e va0-va3), each slot working on a whole 8 x 128 vreg; v5e has no source and "
       "takes the 4 of v5p (its generation) and of v6e (its successor)"},
      {"VPU transcendental rate", "one 8 x 128 vreg per cycle: 1/alus (chip.vpu.transcendental_rate)",
       "configs/chips/*.yaml",
       "exp, tanh, rsqrt and reciprocal run on one transcendental unit beside the ALUs; on v6e only one of the "
       "four vector-ALU slots issues them (tpuasm), so at most one vreg per cycle; taken as one vreg per "
       "cycle on every generation (0.5 on v2-v4, 0.25 on v5e-v6e), not published"},
      {"slowdown onset, faults in a step", "a slowdown from its step's start; a cable or chip at its tick",
       "models/src/job/job_timeline.cpp",
       "a slowdown (straggler, degraded HBM or link) takes effect at the start of the step it lands in (at most one "
       "step pessimistic; its tick inside the step is not simulated); a timed cable failing inside a step under "
       "reroute, or a timed chip stopping, is simulated at its tick in that step with the faults lasting then "
       "(docs/faults.md): the cable's step is charged its simulated time, at least the step before; the chip's is "
       "simulated for the report only (the job loses the step's work since its start, however far it got); a cable "
       "drawn from fault_rates, or landing in a checkpoint write, stalls its step (or write) to the detection and "
       "runs it again from its start at the rerouted step time; a chip drawn from fault_rates, or landing in a "
       "checkpoint write or a restore, is charged on the timeline without a simulation of its tick"},
      {"inference job after a fault", "every step done kept; weights loaded by job.restart",
       "models/src/job/job_timeline.cpp",
       "a decode, prefill or forward step updates no state: what it served is delivered, so a fault loses only the "
       "step in flight and no checkpoint is read; the relaunch (job.restart) is taken to load the weights, as it "
       "initialises a training job that has written no checkpoint; the KV cache of the sequences being decoded "
       "is lost with the job and rebuilt at no cost (prefilling their prompts again is not charged); not published"},
      {"faults while the job is down", "found at the relaunch's end, repaired together",
       "models/src/job/job_timeline.cpp",
       "a component that fails while the job is down for a recovery is found when the job starts again (the "
       "relaunch initialises every chip and cable), at no extra detection unless its own heartbeat timeout is "
       "later, and must be recovered before the restore; several found at one relaunch are repaired (or "
       "swapped) in parallel, the relaunch and restore paid once. One that stops a component after a fault that "
       "rolls back but before that fault is detected (the job still up, hung on it) is found by its own heartbeat "
       "and recovered with it in the same way; not published"},
  };
}

}  // namespace tpusim::models
