// What SystemC's elaboration costs per object on this machine (bench/README.md, "bench_systemc_costs"): the
// numbers behind the design of the chip's blocks (models/README.md, "What elaboration costs"). One kind of
// object per process, N of them (named chipI_bJ, 16 per I) at the top level, optionally with the other
// objects of a pod already registered (`--registered M` modules first; the object manager's name table grows
// with the pod):
//   bench_systemc_costs module N          an empty sc_module (a child of a named parent)
//   bench_systemc_costs port N            an sc_port (zero or more bound) in its own module: module + port
//   bench_systemc_costs event N           an unnamed sc_event member of a module: module + event
//   bench_systemc_costs socket N          a module with a multi-passthrough initiator socket, bound to a
//                                         target module's multi-passthrough target socket: 2 modules, 2 sockets,
//                                         1 bind
//   bench_systemc_costs plain-socket N    the same with the plain tlm_initiator_socket / tlm_target_socket
//   bench_systemc_costs method N          a module with one SC_METHOD sensitive to one event
// It prints cpu time and heap bytes per unit (heap from mallinfo2, page faults from getrusage); subtract
// `module` from the others for the object alone.
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace {

using sc_core::sc_module;
using sc_core::sc_module_name;

struct Empty : sc_module {
  explicit Empty(const sc_module_name& n) : sc_module(n) {}
};

struct Drain : virtual sc_core::sc_interface {
  virtual int pop() = 0;
};

struct WithPort : sc_module {
  sc_core::sc_port<Drain, 1, sc_core::SC_ZERO_OR_MORE_BOUND> port;
  explicit WithPort(const sc_module_name& n) : sc_module(n), port("results") {}
};

struct WithEvent : sc_module {
  sc_core::sc_event ev;
  explicit WithEvent(const sc_module_name& n) : sc_module(n) {}
};

struct WithMethod : sc_module {
  SC_HAS_PROCESS(WithMethod);
  sc_core::sc_event ev;
  explicit WithMethod(const sc_module_name& n) : sc_module(n) {
    SC_METHOD(run);
    sensitive << ev;
    dont_initialize();
  }
  void run() {}
};

struct MultiTarget : sc_module {
  tlm_utils::multi_passthrough_target_socket<MultiTarget, 32, tlm::tlm_base_protocol_types, 0,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      socket;
  explicit MultiTarget(const sc_module_name& n) : sc_module(n), socket("socket") {
    socket.register_nb_transport_fw(this, &MultiTarget::fw);
  }
  tlm::tlm_sync_enum fw(int, tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    return tlm::TLM_COMPLETED;
  }
};

struct MultiInitiator : sc_module {
  tlm_utils::multi_passthrough_initiator_socket<MultiInitiator, 32, tlm::tlm_base_protocol_types, 0,
                                                sc_core::SC_ZERO_OR_MORE_BOUND>
      socket;
  explicit MultiInitiator(const sc_module_name& n) : sc_module(n), socket("socket") {
    socket.register_nb_transport_bw(this, &MultiInitiator::bw);
  }
  tlm::tlm_sync_enum bw(int, tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    return tlm::TLM_COMPLETED;
  }
};

struct PlainTarget : sc_module, tlm::tlm_fw_transport_if<> {
  tlm::tlm_target_socket<32, tlm::tlm_base_protocol_types, 0, sc_core::SC_ZERO_OR_MORE_BOUND> socket;
  explicit PlainTarget(const sc_module_name& n) : sc_module(n), socket("socket") { socket.bind(*this); }
  tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
    return tlm::TLM_COMPLETED;
  }
  void b_transport(tlm::tlm_generic_payload&, sc_core::sc_time&) override {}
  bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
  unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
};

struct PlainInitiator : sc_module, tlm::tlm_bw_transport_if<> {
  tlm::tlm_initiator_socket<32, tlm::tlm_base_protocol_types, 1, sc_core::SC_ZERO_OR_MORE_BOUND> socket;
  explicit PlainInitiator(const sc_module_name& n) : sc_module(n), socket("socket") { socket.bind(*this); }
  tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
    return tlm::TLM_COMPLETED;
  }
  void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

// Unit i's name: chipI_bJ, 16 units per I (a pod's chips hold some 16 blocks each).
std::string unit_name(long i) { return "chip" + std::to_string(i / 16) + "_b" + std::to_string(i % 16); }

struct Snapshot {
  double cpu;
  double heap;
  long faults;
};

Snapshot now() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  const double cpu = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
                     1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  const struct mallinfo2 m = mallinfo2();
  return {cpu, static_cast<double>(m.uordblks + m.hblkhd), u.ru_minflt};
}

}  // namespace

int sc_main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const long n = argc > 2 ? std::strtol(argv[2], nullptr, 10) : 100000;
  long registered = 0;
  if (argc > 4 && std::string(argv[3]) == "--registered") registered = std::strtol(argv[4], nullptr, 10);
  for (long i = 0; i < registered; ++i) (void)new Empty(("other" + std::to_string(i)).c_str());

  const Snapshot a = now();
  const auto t0 = std::chrono::steady_clock::now();
  long units = n;
  if (what == "module") {
    for (long i = 0; i < n; ++i) (void)new Empty(unit_name(i).c_str());
  } else if (what == "port") {
    for (long i = 0; i < n; ++i) (void)new WithPort(unit_name(i).c_str());
  } else if (what == "event") {
    for (long i = 0; i < n; ++i) (void)new WithEvent(unit_name(i).c_str());
  } else if (what == "method") {
    for (long i = 0; i < n; ++i) (void)new WithMethod(unit_name(i).c_str());
  } else if (what == "socket") {
    for (long i = 0; i < n; ++i) {
      const std::string base = unit_name(i);
      auto* t = new MultiTarget((base + "t").c_str());
      auto* s = new MultiInitiator((base + "i").c_str());
      s->socket.bind(t->socket);
    }
  } else if (what == "plain-socket") {
    for (long i = 0; i < n; ++i) {
      const std::string base = unit_name(i);
      auto* t = new PlainTarget((base + "t").c_str());
      auto* s = new PlainInitiator((base + "i").c_str());
      s->socket.bind(t->socket);
    }
  } else {
    std::fprintf(stderr,
                 "usage: bench_systemc_costs module|port|event|method|socket|plain-socket N [--registered M]\n");
    return 2;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Snapshot b = now();
  std::printf("%-13s %8ld units (%ld modules registered before): %7.0f ns cpu/unit, %7.0f B heap/unit, %5.2f page "
              "faults/unit, wall %.3f s\n",
              what.c_str(), units, registered, 1e9 * (b.cpu - a.cpu) / static_cast<double>(units),
              (b.heap - a.heap) / static_cast<double>(units),
              static_cast<double>(b.faults - a.faults) / static_cast<double>(units), wall);
  std::fflush(stdout);
  std::_Exit(0);  // leave the objects to the process's end, as the pod does (teardown is quadratic)
}
