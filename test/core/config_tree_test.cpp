// The config tree: YAML converted once into nodes that remember file:line:column (1-based) and the comment
// trailing each value (where configs cite their source), plus the merge and `--set` override operations
// scenarios are composed with.
#include "tpusim/core/config_tree.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace tpusim {
namespace {

ConfigNode load_ok(std::string_view text, const std::string& origin = "test.yaml") {
  Diagnostics diags;
  ConfigNode n = load_yaml_string(text, origin, diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  return n;
}

// Follows a dotted path through maps; null when any step is missing.
const ConfigNode* at(const ConfigNode& root, const std::string& dotted) {
  const ConfigNode* n = &root;
  std::size_t start = 0;
  while (n != nullptr) {
    const auto dot = dotted.find('.', start);
    n = n->find(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return n;
}

constexpr std::string_view kNested =
    "name: v4\n"
    "hbm:\n"
    "  capacity: 32 GiB   # docs/hardware.md [P]\n"
    "  timing:\n"
    "    latency: 500 ns  # assumption: not published\n"
    "shape: [4, 4, 4]     # three axes\n";

TEST(ConfigTree, NestedValuesRecordOneBasedLineAndColumn) {
  const ConfigNode root = load_ok(kNested);
  ASSERT_TRUE(root.is_map());
  const ConfigNode* latency = at(root, "hbm.timing.latency");
  ASSERT_NE(latency, nullptr);
  EXPECT_EQ(latency->scalar(), "500 ns");
  EXPECT_EQ(latency->loc().file, "test.yaml");
  EXPECT_EQ(latency->loc().line, 5);
  EXPECT_EQ(latency->loc().column, 14);
  EXPECT_EQ(latency->loc().str(), "test.yaml:5:14");

  const ConfigNode* name = at(root, "name");
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(name->loc().line, 1);
  EXPECT_EQ(name->loc().column, 7);
}

TEST(ConfigTree, MapEntriesRecordWhereTheirKeyIs) {
  const ConfigNode root = load_ok(kNested);
  const ConfigNode* timing = at(root, "hbm.timing");
  ASSERT_NE(timing, nullptr);
  ASSERT_EQ(timing->entries().size(), 1u);
  EXPECT_EQ(timing->entries()[0].key, "latency");
  EXPECT_EQ(timing->entries()[0].key_loc.line, 5);
  EXPECT_EQ(timing->entries()[0].key_loc.column, 5);
  EXPECT_EQ(root.keys(), (std::vector<std::string>{"name", "hbm", "shape"}));
}

TEST(ConfigTree, TrailingCommentIsCapturedTrimmed) {
  const ConfigNode root = load_ok(kNested);
  EXPECT_EQ(at(root, "hbm.capacity")->comment(), "docs/hardware.md [P]");
  EXPECT_EQ(at(root, "hbm.timing.latency")->comment(), "assumption: not published");
  EXPECT_EQ(at(root, "shape")->comment(), "three axes");
  EXPECT_EQ(at(root, "name")->comment(), "");
}

TEST(ConfigTree, HashInsideAValueDoesNotStartAComment) {
  const ConfigNode root = load_ok("tag: a#b   # the source\n");
  EXPECT_EQ(at(root, "tag")->scalar(), "a#b");
  EXPECT_EQ(at(root, "tag")->comment(), "the source");
}

TEST(ConfigTree, FlowListsBecomeSequencesWithLocatedItems) {
  const ConfigNode root = load_ok(kNested);
  const ConfigNode* shape = at(root, "shape");
  ASSERT_TRUE(shape->is_seq());
  ASSERT_EQ(shape->items().size(), 3u);
  EXPECT_EQ(shape->items()[2].scalar(), "4");
  EXPECT_EQ(shape->items()[2].loc().line, 6);
  EXPECT_EQ(shape->items()[2].loc().column, 15);
  EXPECT_EQ(shape->describe(), "a list");
}

TEST(ConfigTree, DescribeNamesWhatANodeIsForErrors) {
  const ConfigNode root = load_ok("a: 100 GB\nb:\nc: []\nd: {}\n");
  EXPECT_EQ(at(root, "a")->describe(), "'100 GB'");
  EXPECT_EQ(root.describe(), "a map");
  EXPECT_TRUE(at(root, "b")->is_null());
  // Empty ones say so: "expected a list of values, found a list" read as no error at all.
  EXPECT_EQ(at(root, "c")->describe(), "an empty list");
  EXPECT_EQ(at(root, "d")->describe(), "an empty map");
}

TEST(ConfigTree, DuplicateKeyIsAnErrorAtTheSecondKey) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string("hbm:\n  capacity: 1 GiB\n  capacity: 2 GiB\n", "dup.yaml", diags);
  ASSERT_EQ(diags.size(), 1u);
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.message, "duplicate key");
  EXPECT_EQ(d.key_path, "hbm.capacity");
  EXPECT_EQ(d.loc.file, "dup.yaml");
  EXPECT_EQ(d.loc.line, 3);
  EXPECT_EQ(d.loc.column, 3);
  // The first value is kept.
  EXPECT_EQ(at(root, "hbm.capacity")->scalar(), "1 GiB");
}

// YAML ends a key at ':' only before a space, so `{fsdp:8}` is the key 'fsdp:8' with no value: refused at the
// key with the spaced form, and the map's other entries are still read. A quoted key or a value holding a colon
// is no such thing.
TEST(ConfigTree, AFlowMapKeyWithoutASpaceAfterItsColonIsAnErrorWithTheSpacedForm) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string("mesh: {fsdp:8, tensor: 2}\n", "m.yaml", diags);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.key_path, "mesh.fsdp");
  EXPECT_EQ(d.message, "no space after ':' in a flow map");
  EXPECT_EQ(d.loc.line, 1);
  EXPECT_EQ(d.loc.column, 8);
  EXPECT_EQ(d.found, "'fsdp:8'");
  EXPECT_EQ(d.hint, "YAML needs a space after ':' in a flow map: write 'fsdp: 8', not 'fsdp:8'");
  EXPECT_EQ(flow_text(*at(root, "mesh")), "{tensor: 2}");
  (void)load_ok("a: {'b:c': 1, d: \"e:f\", g: h:i}\nj:\n  k:l\n");
}

// The one error a text that cannot be read gives, which leaves nothing read (a null tree).
Diagnostic only_error(std::string_view text, const std::string& origin) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string(text, origin, diags);
  EXPECT_TRUE(root.is_null());
  EXPECT_EQ(diags.size(), 1u) << diags.str();
  return diags.empty() ? Diagnostic{} : diags.items()[0];
}

TEST(ConfigTree, MalformedYamlIsOneErrorWithItsLine) {
  const Diagnostic d = only_error("a: 1\nb: [1, 2\nc: 3\n", "bad.yaml");
  EXPECT_EQ(d.message, "malformed YAML");
  EXPECT_EQ(d.loc.file, "bad.yaml");
  EXPECT_GE(d.loc.line, 2);  // yaml-cpp reports where it gave up: on or after the unclosed list
  EXPECT_LE(d.loc.line, 4);
  EXPECT_FALSE(d.found.empty());
}

TEST(ConfigTree, BadIndentationIsReportedWithItsLine) {
  Diagnostics diags;
  (void)load_yaml_string("a:\n  b: 1\n c: 2\n", "indent.yaml", diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].message, "malformed YAML");
  EXPECT_EQ(diags.items()[0].loc.line, 3);
}

TEST(ConfigTree, ASecondDocumentIsAnErrorAtItsFirstLine) {
  const Diagnostic d = only_error("a: 1\n---\nb: 2\n", "two.yaml");
  EXPECT_EQ(d.message, "more than one YAML document");
  EXPECT_EQ(d.found, "2 documents separated by '---'");
  EXPECT_EQ(d.loc.str(), "two.yaml:3:1");
  // One document with its start marker, or an empty text, is fine.
  EXPECT_EQ(load_ok("---\na: 1\n").find("a")->scalar(), "1");
  EXPECT_TRUE(load_ok("").is_null());
}

// yaml-cpp 0.7 never consumes a ',' outside a flow collection: LoadAll looped for ever on such a file (a
// fuzzer found ",  itr") and Load read it as an empty document. Both are refused, at the comma.
TEST(ConfigTree, AStrayCommaIsMalformedYamlAtTheComma) {
  const Diagnostic first = only_error(",  itr\003", "comma.yaml");
  EXPECT_EQ(first.message, "malformed YAML");
  EXPECT_EQ(first.found, "a ',' outside a [...] or {...} collection");
  EXPECT_EQ(first.loc.str(), "comma.yaml:1:1");
  const Diagnostic later = only_error("name: s\npod: v4-1x1x1\n, workload\n", "later.yaml");
  EXPECT_EQ(later.message, "malformed YAML");
  EXPECT_EQ(later.loc.line, 3);
  // Inside a flow collection a comma is the separator it should be.
  EXPECT_EQ(load_ok("a: [1, 2]\n").find("a")->items().size(), 2u);
}

TEST(ConfigTree, TextThatIsNotUtf8IsAnErrorAtItsFirstBadByte) {
  // "caf\xe9" is Latin-1; overlong forms (0xC0 0xAF) and surrogates (0xED 0xA0 0x80) are not UTF-8 either.
  const Diagnostic d = only_error("a: 1\nname: caf\xe9\n", "latin1.yaml");
  EXPECT_EQ(d.message, "not valid UTF-8");
  EXPECT_EQ(d.found, "the byte 0xE9");
  EXPECT_EQ(d.loc.str(), "latin1.yaml:2:10");
  for (const char* bad : {"a: \xc0\xaf\n", "a: \xed\xa0\x80\n", "a: \xf4\x90\x80\x80\n", "a: \xe2\x82\n"}) {
    EXPECT_EQ(only_error(bad, "bad.yaml").loc.str(), "bad.yaml:1:4") << bad;
  }
  // Two-, three- and four-byte characters are accepted: "café", "€", "𝄞".
  EXPECT_EQ(load_ok("a: caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e\n").find("a")->scalar(),
            "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
}

TEST(ConfigTree, MissingFileIsAnErrorNamingTheFile) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_file("/nonexistent/tpusim/none.yaml", diags);
  EXPECT_TRUE(root.is_null());
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].loc.file, "/nonexistent/tpusim/none.yaml");
  EXPECT_EQ(diags.items()[0].message, "cannot open file");
}

TEST(ConfigTree, LoadedFilesAreNamedByTheirPath) {
  const auto path = std::filesystem::temp_directory_path() / "tpusim_config_tree_test.yaml";
  {
    std::ofstream out(path);
    out << "# header\nclock: 1.05 GHz  # [S]\n";
  }
  Diagnostics diags;
  const ConfigNode root = load_yaml_file(path, diags);
  std::filesystem::remove(path);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(at(root, "clock")->loc().str(), path.string() + ":2:8");
  EXPECT_EQ(at(root, "clock")->comment(), "[S]");
}

TEST(MergeInto, MapsMergeKeyByKeyAndOtherValuesReplace) {
  ConfigNode base = load_ok("hbm:\n  capacity: 32 GiB\n  bandwidth: 1200 GB/s\nshape: 4\n", "base.yaml");
  const ConfigNode overlay =
      load_ok("hbm:\n  bandwidth: 2 TB/s\n  latency: 1 us\nshape: [4, 4]\n", "overlay.yaml");
  Diagnostics diags;
  merge_into(base, overlay, "chip", diags);
  EXPECT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(at(base, "hbm.capacity")->scalar(), "32 GiB");
  EXPECT_EQ(at(base, "hbm.capacity")->loc().file, "base.yaml");
  EXPECT_EQ(at(base, "hbm.bandwidth")->scalar(), "2 TB/s");
  EXPECT_EQ(at(base, "hbm.bandwidth")->loc().file, "overlay.yaml");  // the origin follows the value
  EXPECT_EQ(at(base, "hbm.latency")->scalar(), "1 us");
  ASSERT_TRUE(at(base, "shape")->is_seq());
  EXPECT_EQ(at(base, "shape")->items().size(), 2u);
  EXPECT_EQ(at(base, "hbm")->keys(), (std::vector<std::string>{"capacity", "bandwidth", "latency"}));
}

// `chip: {hbm: }` over a chip whose hbm is a block is a section written with no value: refused at the
// overlay's line as everywhere, and the base's block kept (so the base's own checks still run); a scalar with no
// value replaces the base's, for its reader to refuse as an empty value.
TEST(MergeInto, AnOverlayWithNoValueOverASectionIsRefusedAtTheOverlay) {
  ConfigNode base = load_ok("hbm:\n  capacity: 32 GiB\npaths: [a -> b]\nclock: 1 GHz\n", "base.yaml");
  const ConfigNode overlay = load_ok("hbm:\npaths:\nclock:\n", "overlay.yaml");
  Diagnostics diags;
  merge_into(base, overlay, "chip", diags);
  ASSERT_EQ(diags.size(), 2u) << diags.str();
  EXPECT_EQ(diags.items()[0].loc.str(), "overlay.yaml:1:1");
  EXPECT_EQ(diags.items()[0].key_path, "chip.hbm");
  EXPECT_EQ(diags.items()[0].message, "wrong type");
  EXPECT_EQ(diags.items()[0].found, "nothing (an empty value)");
  EXPECT_EQ(diags.items()[1].key_path, "chip.paths");
  EXPECT_EQ(at(base, "hbm.capacity")->scalar(), "32 GiB");
  EXPECT_TRUE(at(base, "clock")->is_null());
}

TEST(SplitAssignment, SplitsAtTheFirstEqualsAndTrimsThePath) {
  std::string path, value;
  ASSERT_TRUE(split_assignment(" chip.hbm.bandwidth =2TB/s", path, value));
  EXPECT_EQ(path, "chip.hbm.bandwidth");
  EXPECT_EQ(value, "2TB/s");
  ASSERT_TRUE(split_assignment("a=b=c", path, value));
  EXPECT_EQ(path, "a");
  EXPECT_EQ(value, "b=c");
  EXPECT_FALSE(split_assignment("no-equals", path, value));
}

TEST(ApplyOverride, CreatesIntermediateMapsAndNamesTheOverrideAsOrigin) {
  ConfigNode root = ConfigNode::make_map(SourceLoc{"s.yaml", 1, 1});
  Diagnostics diags;
  apply_override(root, "chip.hbm.bandwidth=2TB/s", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const ConfigNode* bw = at(root, "chip.hbm.bandwidth");
  ASSERT_NE(bw, nullptr);
  EXPECT_EQ(bw->scalar(), "2TB/s");
  EXPECT_EQ(bw->loc().file, "--set chip.hbm.bandwidth=2TB/s");
  EXPECT_TRUE(at(root, "chip")->is_map());
  EXPECT_TRUE(at(root, "chip.hbm")->is_map());
}

TEST(ApplyOverride, ReplacesAScalarWithAList) {
  ConfigNode root = load_ok("pod:\n  shape: 4\n  name: x\n");
  Diagnostics diags;
  apply_override(root, "pod.shape=[8, 8, 8]", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const ConfigNode* shape = at(root, "pod.shape");
  ASSERT_TRUE(shape->is_seq());
  ASSERT_EQ(shape->items().size(), 3u);
  EXPECT_EQ(shape->items()[0].scalar(), "8");
  EXPECT_EQ(shape->loc().file, "--set pod.shape=[8, 8, 8]");
  EXPECT_EQ(at(root, "pod.name")->scalar(), "x");  // siblings untouched
}

TEST(ApplyOverride, ReplacesAnExistingScalarInPlace) {
  ConfigNode root = load_ok("a:\n  b: 1\n  c: 2\n");
  Diagnostics diags;
  apply_override(root, "a.b=3", diags);
  ASSERT_TRUE(diags.empty());
  EXPECT_EQ(at(root, "a.b")->scalar(), "3");
  EXPECT_EQ(at(root, "a")->keys(), (std::vector<std::string>{"b", "c"}));
}

TEST(ApplyOverride, TurnsAScalarOnThePathIntoAMap) {
  ConfigNode root = load_ok("a: 1\n");
  Diagnostics diags;
  apply_override(root, "a.b=2", diags);
  ASSERT_TRUE(diags.empty());
  EXPECT_EQ(at(root, "a.b")->scalar(), "2");
}

TEST(ApplyOverride, OfAMapWithoutKindOverAChipBlockIsRefusedNamingTheKeysItWouldDrop) {
  const std::string text = "chip:\n  hbm: {kind: hbm, capacity: 32 GiB, bandwidth: 1200 GB/s}\n";
  ConfigNode root = load_ok(text);
  Diagnostics diags;
  apply_override(root, "chip.hbm={bandwidth: 1 TB/s}", diags);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.loc.file, "--set chip.hbm={bandwidth: 1 TB/s}");
  EXPECT_EQ(d.key_path, "chip.hbm");
  EXPECT_EQ(d.message, "a map replaces the whole block, and this one drops the block's kind");
  EXPECT_EQ(d.found, "{bandwidth: 1 TB/s}, which would leave the block without kind, capacity");
  EXPECT_EQ(d.hint, "did you mean --set 'chip.hbm.bandwidth=1 TB/s'? a map given to --set replaces the field it names");
  EXPECT_EQ(flow_text(*at(root, "chip.hbm")), "{kind: hbm, capacity: 32 GiB, bandwidth: 1200 GB/s}");  // kept
  // With its kind the map is the whole block, as documented: it replaces the old one.
  Diagnostics whole;
  apply_override(root, "chip.hbm={kind: hbm, bandwidth: 1 TB/s}", whole);
  ASSERT_TRUE(whole.empty()) << whole.str();
  EXPECT_EQ(flow_text(*at(root, "chip.hbm")), "{kind: hbm, bandwidth: 1 TB/s}");
}

// `--set chip.hbm={bandwidth:2TB/s}` was refused as a map dropping the block's kind, with the hint "did you mean
// --set 'chip.hbm.bandwidth:2TB/s='?". Now one error, at the key's full path, and the block is left as it was.
TEST(ApplyOverride, AFlowMapKeyWithoutASpaceIsOneErrorAtItsFullKeyPath) {
  const std::string text = "chip:\n  hbm: {kind: hbm, capacity: 32 GiB, bandwidth: 1200 GB/s}\n";
  ConfigNode root = load_ok(text);
  Diagnostics diags;
  apply_override(root, "chip.hbm={bandwidth:2TB/s}", diags);
  ASSERT_EQ(diags.size(), 1u) << diags.str();
  const Diagnostic& d = diags.items()[0];
  EXPECT_EQ(d.loc.file, "--set chip.hbm={bandwidth:2TB/s}");
  EXPECT_EQ(d.key_path, "chip.hbm.bandwidth");
  EXPECT_EQ(d.hint, "YAML needs a space after ':' in a flow map: write 'bandwidth: 2TB/s', not 'bandwidth:2TB/s'");
  EXPECT_EQ(flow_text(*at(root, "chip.hbm")), "{kind: hbm, capacity: 32 GiB, bandwidth: 1200 GB/s}");
}

TEST(ApplyOverride, OfAMapReadFromAFileReplacesTheNodeAndKeepsEachValuesPlace) {
  ConfigNode root = load_ok("workload:\n  mesh: {data: 4, fsdp: 2}\n");
  Diagnostics diags;
  const ConfigNode set = load_yaml_string("set:\n  workload.mesh:\n    data: 1\n    tensor: 8\n", "cal.yaml", diags);
  const ConfigNode::Entry& e = set.find("set")->entries()[0];
  apply_override(root, Override{e.key + "=" + flow_text(e.value), e.key_loc, e.value.loc(), e.value}, diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(at(root, "workload.mesh")->keys(), (std::vector<std::string>{"data", "tensor"}));
  EXPECT_EQ(at(root, "workload.mesh.tensor")->loc().str(), "cal.yaml:4:13");
  // The same text on the command line: the same tree, named as the argument.
  ConfigNode cli = load_ok("workload:\n  mesh: {data: 4, fsdp: 2}\n");
  apply_override(cli, "workload.mesh=" + flow_text(e.value), diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(flow_text(*at(cli, "workload.mesh")), "{data: 1, tensor: 8}");
  EXPECT_EQ(at(cli, "workload.mesh.tensor")->loc().file, "--set workload.mesh={data: 1, tensor: 8}");
}

TEST(ApplyOverride, WithoutAnEqualsSignIsAnError) {
  ConfigNode root = ConfigNode::make_map(SourceLoc{});
  Diagnostics diags;
  apply_override(root, "chip.clock", diags);
  ASSERT_EQ(diags.size(), 1u);
  EXPECT_EQ(diags.items()[0].message, "malformed override");
  EXPECT_EQ(diags.items()[0].loc.file, "--set chip.clock");
  EXPECT_TRUE(root.entries().empty());
}

TEST(ApplyOverride, ChangesAnEntryOfAListByItsIndex) {
  ConfigNode root = load_ok("faults:\n  - {at: 1 s, kind: straggler}\n  - {at: 2 s, kind: link_down}\n");
  Diagnostics diags;
  apply_override(root, "faults[1].at=5 s", diags);
  apply_override(root, "faults[0]={at: 3 s, kind: chip_down}", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  const ConfigNode& faults = *at(root, "faults");
  ASSERT_EQ(faults.items().size(), 2u);
  EXPECT_EQ(flow_text(faults.items()[0]), "{at: 3 s, kind: chip_down}");
  EXPECT_EQ(faults.items()[1].find("at")->scalar(), "5 s");
  EXPECT_EQ(faults.items()[1].find("at")->loc().file, "--set faults[1].at=5 s");
  EXPECT_EQ(faults.items()[1].find("kind")->scalar(), "link_down");  // the rest of the entry untouched
}

TEST(ApplyOverride, OfAListEntryThatIsNotThereIsAnErrorThatChangesNothing) {
  const std::string text = "faults:\n  - {at: 1 s}\njob: {steps: 3}\n";
  const auto refused = [&](const std::string& assignment) {
    ConfigNode root = load_ok(text);
    Diagnostics diags;
    apply_override(root, assignment, diags);
    EXPECT_EQ(flow_text(*at(root, "faults")), "[{at: 1 s}]") << assignment;
    EXPECT_EQ(diags.size(), 1u) << assignment;
    return diags.empty() ? Diagnostic{} : diags.items()[0];
  };
  const Diagnostic past_end = refused("faults[1].at=2 s");
  EXPECT_EQ(past_end.message, "no such entry in the list");
  EXPECT_EQ(past_end.key_path, "faults");
  EXPECT_EQ(past_end.expected, "an index below 1 (the list's length)");
  EXPECT_EQ(refused("job[0].steps=4").message, "not a list");
  EXPECT_EQ(refused("nothing[0]=4").found, "nothing");
  EXPECT_EQ(refused("faults[x].at=2 s").message, "malformed override");
  EXPECT_EQ(refused("faults[].at=2 s").message, "malformed override");
  EXPECT_EQ(refused("faults[0.at=2 s").message, "malformed override");
}

TEST(ConfigNodeSet, InsertsThenReplacesAndEraseRemoves) {
  ConfigNode m = ConfigNode::make_map(SourceLoc{"m", 1, 1});
  m.set("a", SourceLoc{}, ConfigNode::make_scalar("1", SourceLoc{}));
  m.set("b", SourceLoc{}, ConfigNode::make_scalar("2", SourceLoc{}));
  m.set("a", SourceLoc{}, ConfigNode::make_scalar("3", SourceLoc{}));
  EXPECT_EQ(m.keys(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.find("a")->scalar(), "3");
  m.erase("a");
  EXPECT_EQ(m.find("a"), nullptr);
  EXPECT_EQ(m.keys(), (std::vector<std::string>{"b"}));
}

TEST(SourceLocStr, OmitsLineAndColumnWhenUnknown) {
  EXPECT_EQ((SourceLoc{"f.yaml", 3, 7}).str(), "f.yaml:3:7");
  EXPECT_EQ((SourceLoc{"--set a=b", 0, 0}).str(), "--set a=b");
}

TEST(DiagnosticStr, ShowsWhereWhatExpectedFoundAndHint) {
  const Diagnostic d{SourceLoc{"c.yaml", 4, 14}, "chip.hbm.bandwith", "unknown key 'bandwith'", "a known key",
                     "bandwith", "did you mean 'bandwidth'?"};
  EXPECT_EQ(d.str(),
            "c.yaml:4:14: error: chip.hbm.bandwith: unknown key 'bandwith'\n"
            "    expected: a known key\n"
            "    found:    bandwith\n"
            "    hint:     did you mean 'bandwidth'?");
}

TEST(Diagnostics, ThrowIfAnyCarriesEveryError) {
  Diagnostics diags;
  EXPECT_NO_THROW(diags.throw_if_any());
  diags.error(SourceLoc{"a", 1, 1}, "x", "first");
  diags.error(SourceLoc{"a", 2, 1}, "y", "second");
  try {
    diags.throw_if_any();
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.diagnostics().size(), 2u);
    EXPECT_EQ(std::string(e.what()), "a:1:1: error: x: first\na:2:1: error: y: second");
  }
}

TEST(Suggestion, OffersTheClosestKeyForATypo) {
  const std::vector<std::string> keys{"capacity", "bandwidth", "latency"};
  EXPECT_EQ(suggestion("bandwith", keys), "did you mean 'bandwidth'?");
  EXPECT_EQ(suggestion("zzz", keys), "expected one of: capacity, bandwidth, latency");
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(closest_match("qwertyuiop", keys), "");
}

TEST(FlowText, RendersScalarsAsWrittenAndListsAndMapsInFlowStyle) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string(
      "a: 16 MiB\nb: [4, [1, 2], x]\nc: {d: 1}\nm:\n  from: llama2-7b\n  mesh: {data: 2, fsdp: [x, y]}\ne:\n",
      "flow.yaml", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(flow_text(*root.find("a")), "16 MiB");
  EXPECT_EQ(flow_text(*root.find("b")), "[4, [1, 2], x]");
  EXPECT_EQ(flow_text(*root.find("c")), "{d: 1}");
  EXPECT_EQ(flow_text(*root.find("m")), "{from: llama2-7b, mesh: {data: 2, fsdp: [x, y]}}");
  EXPECT_EQ(flow_text(*root.find("e")), "");
}

// What flow_text writes is what `--set path=value` reads: the same tree, whatever the scalars hold.
TEST(FlowText, ReadsBackToTheSameTreeWithScalarsYamlWouldReadOtherwiseQuoted) {
  Diagnostics diags;
  const ConfigNode root = load_yaml_string(
      "a: 'x: y'\nb: ['1, 2', '[3]', '{4}', '#5', '- 6', '-7', \"q\\\"uote\", '']\nc: {'k, 1': 'v # w', n: ~}\n",
      "flow.yaml", diags);
  ASSERT_TRUE(diags.empty()) << diags.str();
  EXPECT_EQ(flow_text(*root.find("a")), "\"x: y\"");
  EXPECT_EQ(flow_text(*root.find("b")), R"(["1, 2", "[3]", "{4}", "#5", "- 6", -7, q"uote, ""])");
  EXPECT_EQ(flow_text(*root.find("c")), R"({"k, 1": "v # w", n: null})");
  for (const char* key : {"a", "b", "c"}) {
    const ConfigNode back = load_yaml_string(flow_text(*root.find(key)), "--set", diags);
    ASSERT_TRUE(diags.empty()) << diags.str();
    EXPECT_EQ(flow_text(back), flow_text(*root.find(key))) << key;
  }
  const ConfigNode b = load_yaml_string(flow_text(*root.find("b")), "--set", diags);
  ASSERT_EQ(b.items().size(), 8u);
  EXPECT_EQ(b.items()[0].scalar(), "1, 2");
  EXPECT_EQ(b.items()[6].scalar(), "q\"uote");
  EXPECT_TRUE(b.items()[7].is_scalar());
  const ConfigNode c = load_yaml_string(flow_text(*root.find("c")), "--set", diags);
  EXPECT_EQ(c.find("k, 1")->scalar(), "v # w");
  EXPECT_TRUE(c.find("n")->is_null());
}

}  // namespace
}  // namespace tpusim
