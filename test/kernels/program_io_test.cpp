#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels_test_support.h"
#include "tpusim/core/diagnostics.h"
#include "tpusim/kernels/lowering.h"
#include "tpusim/kernels/program_io.h"
#include <gtest/gtest.h>

namespace tpusim::ir {
namespace {

std::string to_json(const ProgramSet& set) {
  std::ostringstream out;
  write_program_json(set, out);
  return out.str();
}

ProgramSet training_step() {
  WorkloadSpec w;
  w.model.name = "mlp";
  w.model.mlp.widths = {256, 512, 128};
  w.batch = 64;
  return kernels::lower_workload(w, kernels::testing::v4_like());
}

// The diagnostics of parsing `text`; fails the test when it parses.
std::vector<Diagnostic> errors_of(const std::string& text) {
  try {
    (void)parse_program_json(text, "bad.json");
  } catch (const ConfigError& e) {
    return e.diagnostics();
  }
  ADD_FAILURE() << "parsed without error:\n" << text;
  return {};
}

std::string file_with(const std::string& instructions, const std::string& version = "1") {
  return R"({"format": "tpusim-program", "version": )" + version +
         R"(, "role_of_chip": [], "programs": [{"name": "p", "instructions": [)" + instructions + "]}]}";
}

TEST(ProgramJson, TinyProgramHasTheDocumentedLayout) {
  Program p("tiny");
  Instruction load;
  load.kind = OpKind::dma;
  load.bytes = 4096;
  load.vmem.alloc = 4096;
  const auto a = p.add(load, {}, "load");
  Instruction mm;
  mm.kind = OpKind::matmul;
  mm.shape.m = mm.shape.k = mm.shape.n = 16;
  mm.flops.model = mm.flops.hardware = 8192;
  mm.vmem.free = 4096;
  mm.core = 1;
  p.add(mm, {a}, "mm");
  ProgramSet set;
  set.programs.push_back(p);
  EXPECT_EQ(to_json(set),
            "{\n"
            "  \"format\": \"tpusim-program\",\n"
            "  \"version\": 2,\n"
            "  \"role_of_chip\": [],\n"
            "  \"programs\": [\n"
            "    {\n"
            "      \"name\": \"tiny\",\n"
            "      \"instructions\": [\n"
            "        {\"op\":\"dma\",\"label\":\"load\",\"src\":\"hbm\",\"dst\":\"vmem\",\"pattern\":\"contiguous\","
            "\"bytes\":4096,\"vmem_alloc\":4096,\"deps\":[]},\n"
            "        {\"op\":\"matmul\",\"label\":\"mm\",\"core\":1,\"m\":16,\"k\":16,\"n\":16,\"dtype\":\"bf16\","
            "\"vmem_free\":4096,\"model_flops\":8192.0,\"hardware_flops\":8192.0,\"deps\":[0]}\n"
            "      ]\n"
            "    }\n"
            "  ]\n"
            "}\n");
}

TEST(ProgramJson, RoundTripOfALoweredTrainingStepIsByteIdentical) {
  const ProgramSet set = training_step();
  const std::string first = to_json(set);
  EXPECT_EQ(to_json(set), first);  // deterministic
  const ProgramSet back = parse_program_json(first, "mem");
  EXPECT_EQ(to_json(back), first);
  const Program& a = set.programs[0];
  const Program& b = back.programs[0];
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.model_flops(), b.model_flops());
  EXPECT_EQ(a.dma_bytes(), b.dma_bytes());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a.label_of(a[i]), b.label_of(b[i]));
    ASSERT_EQ(a[i].deps.count, b[i].deps.count);
    for (std::uint32_t d = 0; d < a[i].deps.count; ++d) EXPECT_EQ(a.deps_of(a[i])[d], b.deps_of(b[i])[d]);
  }
}

TEST(ProgramJson, EveryOpKindAndRolesRoundTripThroughAFile) {
  const std::string text = R"({"format": "tpusim-program", "version": 1, "role_of_chip": [0, 1, 1, 0],
    "programs": [
      {"name": "a", "instructions": [
        {"op": "host", "host_op": "infeed", "bytes": 100, "deps": []},
        {"op": "vector", "vector_op": "reduction", "elements": 1024, "dtype": "f32", "deps": [0]},
        {"op": "collective", "collective": "reduce_scatter", "dtype": "bf16", "bytes": 8, "mesh_axes": [0, 2],
         "deps": [1]},
        {"op": "send", "bytes": 64, "mesh_axes": [1], "peer": -1, "deps": []},
        {"op": "recv", "bytes": 64, "mesh_axes": [1], "peer": 1, "deps": [3]},
        {"op": "barrier", "deps": [2, 4]}]},
      {"name": "b", "instructions": []}]})";
  const ProgramSet set = parse_program_json(text, "mem");
  ASSERT_EQ(set.programs.size(), 2u);
  EXPECT_EQ(set.role_of_chip, (std::vector<std::uint16_t>{0, 1, 1, 0}));
  const Program& a = set.programs[0];
  EXPECT_EQ(a[2].comm.collective, CollectiveKind::reduce_scatter);
  EXPECT_EQ(a[2].comm.mesh_axes, 0b101u);
  EXPECT_EQ(a[3].comm.peer, -1);
  EXPECT_EQ(a[1].vector.op, VectorOp::reduction);

  const auto path = std::filesystem::temp_directory_path() / "tpusim_program_io_test.json";
  {
    std::ofstream out(path);
    write_program_json(set, out);
  }
  const ProgramSet back = read_program_json(path);
  std::filesystem::remove(path);
  EXPECT_EQ(to_json(back), to_json(set));
}

TEST(ProgramJson, WrongVersionIsRejectedWithExpectedAndFound) {
  const auto errors = errors_of(file_with("", "3"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/version");
  EXPECT_EQ(errors[0].expected, "1 or 2");
  EXPECT_EQ(errors[0].found, "3");
  EXPECT_EQ(errors[0].loc.file, "bad.json");
}

TEST(ProgramJson, ASignatureIsReadAndIgnoredButMustBeAString) {
  // `tpusim lower` signs its files (kernels/README.md): the field does not change the program, and an edited
  // file (its checksum stale) is still a program to run.
  const ProgramSet set = training_step();
  std::string signed_text = to_json(set);
  signed_text.insert(2, "  \"signature\": \"written by tpusim, checksum fnv1a64 0000000000000000\",\n");
  EXPECT_EQ(to_json(parse_program_json(signed_text, "signed.json")), to_json(set));
  std::string numbered = file_with("");
  numbered.insert(1, R"("signature": 5, )");
  const auto errors = errors_of(numbered);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/signature");
  EXPECT_EQ(errors[0].expected, "a string");
}

TEST(ProgramJson, FusedOpFieldsRoundTripInVersion2) {
  const std::string text = R"({"format": "tpusim-program", "version": 2, "role_of_chip": [], "programs": [
      {"name": "p", "instructions": [
        {"op": "matmul", "core": 1, "m": 2048, "k": 128, "n": 2048, "dtype": "bf16", "class": "attention",
         "batch": 16, "vector_op": "transcendental", "elements": 4096, "hbm_read": 1000, "hbm_written": 500,
         "grid_steps": 4, "buffers": 3, "deps": []},
        {"op": "matmul", "m": 8, "k": 3, "n": 64, "dtype": "bf16", "batch": 49, "sum_batch": true, "deps": []},
        {"op": "vector", "vector_op": "reduction", "elements": 64, "dtype": "f32", "class": "norm_activation",
         "hbm_read": 256, "grid_steps": 1, "deps": [0]}]}]})";
  const ProgramSet set = parse_program_json(text, "mem");
  const Program& p = set.programs[0];
  EXPECT_EQ(p[0].op_class, OpClass::attention);
  EXPECT_EQ(p[0].shape.batch, 16);
  EXPECT_FALSE(p[0].shape.sum_batch);
  EXPECT_EQ(p[0].vector.op, VectorOp::transcendental);
  EXPECT_EQ(p[0].vector.elements, 4096);
  EXPECT_EQ(p[0].stream.hbm_read, 1000u);
  EXPECT_EQ(p[0].stream.hbm_written, 500u);
  EXPECT_EQ(p[0].stream.grid_steps, 4u);
  EXPECT_EQ(p[0].stream.buffers, 3u);
  EXPECT_EQ(p[1].stream.buffers, 0u);  // absent: no pipeline bound
  EXPECT_TRUE(p[0].streams_hbm());
  EXPECT_TRUE(p[1].shape.sum_batch);
  EXPECT_EQ(p[1].shape.batch, 49);
  EXPECT_FALSE(p[1].streams_hbm());
  EXPECT_EQ(p[2].op_class, OpClass::norm_activation);
  EXPECT_EQ(p[2].stream.hbm_read, 256u);
  EXPECT_EQ(to_json(parse_program_json(to_json(set), "again")), to_json(set));
}

TEST(ProgramJson, Version1FilesReadUnchangedButCannotCarryVersion2Fields) {
  const ProgramSet v1 = parse_program_json(
      file_with(R"({"op": "matmul", "m": 8, "k": 8, "n": 8, "dtype": "bf16", "deps": []})", "1"), "old.json");
  EXPECT_EQ(v1.programs[0][0].shape.batch, 1);
  EXPECT_EQ(v1.programs[0][0].op_class, OpClass::other);
  const auto errors =
      errors_of(file_with(R"({"op": "matmul", "m": 8, "k": 8, "n": 8, "dtype": "bf16", "hbm_read": 8, "deps": []})", "1"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/programs/0/instructions/0/hbm_read");
  EXPECT_EQ(errors[0].message, "unknown field");
}

TEST(ProgramJson, ZeroBatchAndUnknownClassAreRejected) {
  const auto errors = errors_of(file_with(
      R"({"op": "matmul", "m": 8, "k": 8, "n": 8, "dtype": "bf16", "batch": 0, "class": "matmull", "deps": []})", "2"));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].key_path, "/programs/0/instructions/0/class");
  EXPECT_EQ(errors[0].hint, "did you mean 'matmul'?");
  EXPECT_EQ(errors[1].key_path, "/programs/0/instructions/0/batch");
}

TEST(ProgramJson, UnknownOpNamesItsPointerAndSuggestsTheClosestName) {
  const auto errors = errors_of(file_with(R"({"op": "barrier", "deps": []}, {"op": "matmull", "deps": []})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/programs/0/instructions/1/op");
  EXPECT_EQ(errors[0].found, "\"matmull\"");
  EXPECT_EQ(errors[0].hint, "did you mean 'matmul'?");
}

TEST(ProgramJson, DependencyOnALaterInstructionIsRejected) {
  const auto errors = errors_of(file_with(R"({"op": "barrier", "deps": [0]})"));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/programs/0/instructions/0/deps/0");
  EXPECT_EQ(errors[0].expected, "an index below 0");
  EXPECT_EQ(errors[0].found, "0");
}

TEST(ProgramJson, MissingAndUnknownFieldsAreAllReportedAtOnce) {
  const auto errors = errors_of(file_with(
      R"({"op": "dma", "src": "hbm", "dst": "vmem", "pattern": "contiguous", "deps": []},
         {"op": "barrier", "deps": [], "lable": "x"})"));
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].key_path, "/programs/0/instructions/0/bytes");
  EXPECT_EQ(errors[0].message, "missing field");
  EXPECT_EQ(errors[1].key_path, "/programs/0/instructions/1/lable");
  EXPECT_EQ(errors[1].hint, "did you mean 'label'?");
}

TEST(ProgramJson, RoleNamingAMissingProgramIsRejected) {
  const auto errors = errors_of(
      R"({"format": "tpusim-program", "version": 1, "role_of_chip": [0, 3],
          "programs": [{"name": "p", "instructions": []}]})");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].key_path, "/role_of_chip/1");
}

TEST(ProgramJson, SyntaxErrorCarriesLineAndColumn) {
  const auto errors = errors_of("{\n  \"format\": \"tpusim-program\",\n  \"version\": 1,,\n}");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "malformed JSON");
  EXPECT_EQ(errors[0].loc.line, 3);
  EXPECT_EQ(errors[0].loc.column, 16);  // the second comma
}

// Found by fuzz_program in CI: a number too large for a double escaped as nlohmann's out_of_range.
TEST(ProgramJson, NumberTooLargeForADoubleIsMalformedJsonAtItsPlace) {
  const auto errors = errors_of("{\n  \"format\": \"tpusim-program\",\n  \"version\": 20971E520\n}");
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "malformed JSON");
  EXPECT_EQ(errors[0].loc.line, 3);
  EXPECT_EQ(errors[0].loc.column, 22);  // the last character of 20971E520
  EXPECT_NE(errors[0].found.find("number overflow parsing '20971E520'"), std::string::npos) << errors[0].found;
}

TEST(ProgramJson, UnreadableFileIsAConfigError) {
  EXPECT_THROW((void)read_program_json("/nonexistent/program.json"), ConfigError);
}

TEST(ProgramJson, EmbeddingGathersAndScattersRoundTripWithTheirShape) {
  const std::string text = R"({"format": "tpusim-program", "version": 1, "role_of_chip": [],
    "programs": [
      {"name": "embeddings", "instructions": [
        {"op": "gather", "rows": 4096, "width": 128, "bags": 2048, "dtype": "bf16", "src": "hbm", "dst": "hbm",
         "deps": []},
        {"op": "scatter", "rows": 4096, "width": 128, "bags": 2048, "dtype": "f32", "src": "hbm", "dst": "hbm",
         "deps": [0]}]}]})";
  const ProgramSet set = parse_program_json(text, "mem");
  const Program& p = set.programs[0];
  EXPECT_EQ(p[0].kind, OpKind::gather);
  EXPECT_EQ(unit_of(p[0].kind), UnitKind::sparsecore);
  EXPECT_EQ(p[0].shape.m, 4096);
  EXPECT_EQ(p[0].shape.n, 128);
  EXPECT_EQ(p[0].shape.k, 2048);
  EXPECT_EQ(p[0].bytes, 4096u * 128 * 2);  // the rows' bytes follow from the shape
  EXPECT_EQ(p[1].kind, OpKind::scatter);
  EXPECT_EQ(p[1].bytes, 4096u * 128 * 4);
  std::ostringstream out;
  write_program_json(set, out);
  EXPECT_NE(out.str().find(R"("op":"gather","rows":4096,"width":128,"bags":2048)"), std::string::npos) << out.str();
  EXPECT_EQ(to_json(parse_program_json(out.str(), "again")), to_json(set));
}

// A remote put names its destination as a send does; a dma to anywhere else takes no peer.
TEST(ProgramJson, ARemotePutNamesItsPeerAndRoundTrips) {
  const std::string text = R"({"format": "tpusim-program", "version": 2, "role_of_chip": [],
    "programs": [
      {"name": "puts", "instructions": [
        {"op": "dma", "src": "hbm", "dst": "remote", "pattern": "contiguous", "bytes": 4096, "peer": -1,
         "mesh_axes": [1], "deps": []},
        {"op": "dma", "src": "vmem", "dst": "remote", "pattern": "contiguous", "bytes": 512, "peer": 2,
         "deps": []}]}]})";
  const ProgramSet set = parse_program_json(text, "puts");
  const Program& p = set.programs[0];
  EXPECT_EQ(p[0].comm.peer, -1);
  EXPECT_EQ(p[0].comm.mesh_axes, 1u << 1);
  EXPECT_EQ(p[1].comm.peer, 2);
  EXPECT_EQ(p[1].comm.mesh_axes, 0u);  // the pod's first axis of more than one chip
  std::ostringstream out;
  write_program_json(set, out);
  EXPECT_NE(out.str().find(R"("bytes":4096,"peer":-1,"mesh_axes":[1])"), std::string::npos) << out.str();
  EXPECT_EQ(to_json(parse_program_json(out.str(), "again")), to_json(set));
  std::string local = text;
  local.replace(local.find(R"("dst": "remote")"), 15, R"("dst": "vmem")");
  try {
    (void)parse_program_json(local, "local");
    ADD_FAILURE() << "a peer on a dma into VMEM was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/programs/0/instructions/0/peer"), std::string::npos) << e.what();
  }
}

TEST(ProgramJson, AMatmulOfNoRowsIsRefusedAtTheDimension) {
  const auto e = errors_of(file_with(R"({"op":"matmul","m":16,"k":0,"n":16,"dtype":"bf16","deps":[]})"));
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].key_path, "/programs/0/instructions/0/k");
  EXPECT_EQ(e[0].message, "a matmul dimension of 0");
  EXPECT_EQ(e[0].loc.line, 1);
}

// An instruction with `flops` (a fragment of its JSON) parses, or names the field and the bound.
std::string flops_error(const std::string& op, const std::string& flops, const std::string& version = "1") {
  const std::string text = file_with("{" + op + flops + R"(,"deps":[]})", version);
  try {
    (void)parse_program_json(text, "f.json");
    return "";
  } catch (const ConfigError& e) {
    const Diagnostic& d = e.diagnostics().at(0);
    return d.key_path.substr(d.key_path.rfind('/') + 1) + ": " + d.expected;
  }
}

TEST(ProgramJson, ModelFlopsAreAtMostTheHardwareFlops) {
  const std::string mm = R"("op":"matmul","m":16,"k":16,"n":16,"dtype":"bf16",)";
  EXPECT_EQ(flops_error(mm, R"("model_flops":8192,"hardware_flops":8192)"), "");
  EXPECT_EQ(flops_error(mm, R"("model_flops":0,"hardware_flops":8192)"), "");  // recomputation
  // Without hardware_flops (0), model FLOPs would give MFU above HFU = 0 (before, the file was read so).
  EXPECT_EQ(flops_error(mm, R"("model_flops":8192)"),
            "model_flops: hardware_flops given too, at least model_flops (model FLOPs are the useful part of what "
            "the hardware executes; an absent hardware_flops is 0)");
  EXPECT_EQ(flops_error(mm, R"("model_flops":0)"), "");
  EXPECT_EQ(flops_error(mm, R"("model_flops":4097,"hardware_flops":4096)"),
            "model_flops: at most hardware_flops, 4096 (model FLOPs are the useful part of what the hardware "
            "executes)");
}

TEST(ProgramJson, AMatmulCountsAtMostTwoFlopsPerMultiplyAdd) {
  const std::string mm = R"("op":"matmul","m":16,"k":16,"n":16,"dtype":"bf16","batch":3,)";
  EXPECT_EQ(flops_error(mm, R"("model_flops":24576,"hardware_flops":24576)", "2"), "");
  EXPECT_EQ(flops_error(mm, R"("hardware_flops":24577)", "2"),
            "hardware_flops: at most 2 x m x k x n x batch = 2 x 16 x 16 x 16 x 3 = 24576");
  EXPECT_EQ(flops_error(mm, R"("model_flops":1e15)", "2"),
            "model_flops: at most 2 x m x k x n x batch = 2 x 16 x 16 x 16 x 3 = 24576");
}

TEST(ProgramJson, EveryOtherOpKindHasAFlopsBound) {
  const std::string vec = R"("op":"vector","vector_op":"elementwise","elements":1000,"dtype":"bf16",)";
  EXPECT_EQ(flops_error(vec, R"("hardware_flops":2000)"), "");
  EXPECT_EQ(flops_error(vec, R"("hardware_flops":2001)"), "hardware_flops: at most 2 x elements = 2 x 1000 = 2000");
  const std::string gather =
      R"("op":"gather","rows":10,"width":8,"bags":2,"dtype":"bf16","src":"hbm","dst":"hbm",)";
  EXPECT_EQ(flops_error(gather, R"("model_flops":160,"hardware_flops":160)"), "");
  EXPECT_EQ(flops_error(gather, R"("model_flops":161)"),
            "model_flops: at most 2 x rows x width = 2 x 10 x 8 = 160");
  const std::string reduce =
      R"("op":"collective","collective":"all_reduce","dtype":"f32","bytes":4096,"mesh_axes":[],)";
  EXPECT_EQ(flops_error(reduce, R"("hardware_flops":2048)"), "");
  EXPECT_EQ(flops_error(reduce, R"("hardware_flops":2049)"),
            "hardware_flops: at most 2 x the elements of its buffer = 2 x 1024 = 2048");
  EXPECT_EQ(flops_error(R"("op":"dma","src":"hbm","dst":"vmem","pattern":"contiguous","bytes":64,)",
                        R"("model_flops":1)"),
            "model_flops: at most 0 (a dma computes nothing)");
  EXPECT_EQ(flops_error(R"("op":"barrier",)", R"("hardware_flops":0)"), "");
}

// Model FLOPs may be a fraction: a chip's share of products r chips compute alike is 1/r of them
// (kernels/README.md, "FLOPs"), 8192 / 3 here. The reader keeps the double as written, neither refused nor
// rounded: rounding each instruction would move the chips' sum off the job's closed form (3 x 2731 = 8193).
TEST(ProgramJson, AFractionalShareOfModelFlopsReadsBackAsTheSameDouble) {
  Program p("share");
  Instruction mm;
  mm.kind = OpKind::matmul;
  mm.shape.m = mm.shape.k = mm.shape.n = 16;
  mm.flops.hardware = 8192;
  mm.flops.model = 8192.0 / 3;
  p.add(mm, {}, "mm");
  ProgramSet set;
  set.programs.push_back(p);
  const std::string text = to_json(set);
  EXPECT_NE(text.find(R"("model_flops":2730.6666666666665,"hardware_flops":8192.0)"), std::string::npos) << text;
  const ProgramSet back = parse_program_json(text, "share");
  EXPECT_EQ(back.programs[0][0].flops.model, 8192.0 / 3);
  EXPECT_EQ(3 * back.programs[0][0].flops.model, 8192.0);
  EXPECT_EQ(to_json(back), text);
}

// Host instructions keep the kind the lowering gave them (a launch and a sync are not an infeed and an outfeed).
TEST(ProgramJson, HostOpKindsRoundTrip) {
  const std::string text = file_with(R"({"op":"host","host_op":"launch","bytes":0,"deps":[]},
    {"op":"host","host_op":"infeed","bytes":64,"deps":[0]},
    {"op":"host","host_op":"checkpoint","bytes":64,"deps":[1]},
    {"op":"host","host_op":"outfeed","bytes":64,"deps":[2]},
    {"op":"host","host_op":"sync","bytes":0,"deps":[3]})");
  const ProgramSet set = parse_program_json(text, "host");
  const Program& a = set.programs[0];
  EXPECT_EQ(a[0].host.op, HostOp::launch);
  EXPECT_EQ(a[1].host.op, HostOp::infeed);
  EXPECT_EQ(a[2].host.op, HostOp::checkpoint);
  EXPECT_EQ(a[3].host.op, HostOp::outfeed);
  EXPECT_EQ(a[4].host.op, HostOp::sync);
  EXPECT_EQ(to_json(parse_program_json(to_json(set), "again")), to_json(set));
}

// An instruction without `class` takes its kind's default: host work is `host` (it was `other`, so a program
// file's host time and collectives were counted as "other" in op_classes). A class other than the default is
// written out, `other` included, and reads back.
TEST(ProgramJson, AnInstructionWithoutAClassTakesItsKindsDefault) {
  const ProgramSet set = parse_program_json(file_with(R"({"op":"host","host_op":"infeed","bytes":64,"deps":[]},
    {"op":"host","host_op":"sync","bytes":0,"deps":[0]})"), "host");
  EXPECT_EQ(set.programs[0][0].op_class, OpClass::host);
  EXPECT_EQ(default_op_class(OpKind::collective), OpClass::communication);
  EXPECT_EQ(default_op_class(OpKind::send), OpClass::communication);
  EXPECT_EQ(default_op_class(OpKind::recv), OpClass::communication);
  EXPECT_EQ(default_op_class(OpKind::matmul), OpClass::other);
  const ProgramSet other = parse_program_json(file_with(R"({"op":"host","host_op":"infeed","bytes":64,"deps":[]},
    {"op":"host","host_op":"sync","bytes":0,"class":"other","deps":[0]})", "2"), "other");
  const std::string text = to_json(other);
  EXPECT_NE(text.find(R"("class":"other")"), std::string::npos) << text;
  EXPECT_EQ(text.find(R"("class":"host")"), std::string::npos) << text;
  const ProgramSet back = parse_program_json(text, "again");
  EXPECT_EQ(back.programs[0][0].op_class, OpClass::host);
  EXPECT_EQ(back.programs[0][1].op_class, OpClass::other);
}

// A step sharded over an axis of 3 (fsdp 3; d_model 256 does not split evenly) gathers and scatters shards padded
// up to whole elements, so what the lowering writes reads back. Before, a shard of a 256 x 256 bf16 weight was
// rounded to the byte (43,691 bytes: 21,845.33 elements), and its program file was refused at every such
// collective as "not a whole number of elements" while the same scenario ran.
TEST(ProgramJson, AStepShardedUnevenlyGathersWholeElementsAndReadsBack) {
  WorkloadSpec w = kernels::testing::training_step(kernels::testing::small_decoder("odd", 1, 256, 4, 1024, 2048, 128),
                                                   3, 128);
  w.mesh.axes.push_back(MeshAxisSpec{"fsdp", 3, {}});
  PodSpec pod;
  pod.name = "ring-3";
  pod.shape = {3};
  const kernels::LoweredWorkload l = kernels::lower(w, kernels::testing::roomy(), pod);
  const Program& p = l.programs.programs[0];
  int gathers = 0;
  for (const Instruction& ins : p.instructions()) {
    if (ins.kind != OpKind::collective) continue;
    EXPECT_EQ(ins.bytes % static_cast<std::uint64_t>(dtype_bytes(ins.dtype)), 0u) << p.label_of(ins);
    if (ins.comm.collective == CollectiveKind::all_gather && ins.bytes == 43'692) ++gathers;  // 21,846 elements
  }
  EXPECT_GT(gathers, 0);
  const std::string text = to_json(l.programs);
  EXPECT_EQ(to_json(parse_program_json(text, "odd")), text);
}

// What the lowering writes meets the rules: a training step's program reads back.
TEST(ProgramJson, ALoweredStepMeetsTheFlopsRules) {
  const ProgramSet set = training_step();
  const ProgramSet again = parse_program_json(to_json(set), "lowered");
  EXPECT_EQ(again.programs[0].model_flops(), set.programs[0].model_flops());
  EXPECT_GT(set.programs[0].model_flops(), 0);
}

}  // namespace
}  // namespace tpusim::ir
